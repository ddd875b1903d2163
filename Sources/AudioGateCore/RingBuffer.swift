/// A bounded FIFO of trivially copyable elements.
///
/// Not thread-safe and deliberately not Sendable: share it through `Synchronization.Mutex`.
/// Storage is allocated in init; with a smaller `initialCapacity` the writing side grows it (by
/// doubling, up to `capacity`) so a large bound that is rarely used costs no memory. Reading never
/// allocates, so the reading side is safe on a real-time device thread.
public final class RingBuffer<Element: BitwiseCopyable> {
    /// Most elements the buffer can hold.
    public let capacity: Int
    private var storage: UnsafeMutableBufferPointer<Element>
    /// Elements the current storage holds (at most `capacity`).
    private var allocated: Int
    private var head = 0
    /// Elements currently stored.
    public private(set) var count = 0

    /// A buffer bounded at `capacity` elements (at least 1), with storage for `initialCapacity` of them now.
    public init(capacity: Int, initialCapacity: Int? = nil) {
        self.capacity = max(capacity, 1)
        allocated = min(max(initialCapacity ?? capacity, 1), self.capacity)
        storage = .allocate(capacity: allocated)
    }

    deinit { storage.deallocate() }

    /// Space left before a plain `write` starts refusing elements.
    public var freeSpace: Int { capacity - count }
    /// Whether no elements are stored.
    public var isEmpty: Bool { count == 0 }
    /// Whether `count == capacity`.
    public var isFull: Bool { count == capacity }

    /// Appends as many elements of `source` as fit; returns how many were written.
    @discardableResult
    public func write(_ source: UnsafeBufferPointer<Element>) -> Int {
        let accepted = min(source.count, freeSpace)
        guard accepted > 0, let src = source.baseAddress else { return 0 }
        reserve(accepted)
        copyIn(src, accepted)
        return accepted
    }

    /// Appends all of `source`, first dropping the oldest stored elements to make room.
    ///
    /// Returns how many elements were lost: old ones dropped plus, if `source` alone exceeds the
    /// capacity, its own leading elements (only its last `capacity` elements are kept).
    @discardableResult
    public func writeOverwritingOldest(_ source: UnsafeBufferPointer<Element>) -> Int {
        guard let base = source.baseAddress, source.count > 0 else { return 0 }
        reserve(min(source.count, capacity - count))
        var src = base
        var incoming = source.count
        var dropped = 0
        if incoming > capacity {
            dropped = count + (incoming - capacity)
            src += incoming - capacity
            incoming = capacity
            head = 0
            count = 0
        } else if incoming > freeSpace {
            let excess = incoming - freeSpace
            dropped = excess
            discard(excess)
        }
        copyIn(src, incoming)
        return dropped
    }

    /// Appends `count` copies of `value` as far as they fit; returns how many were written.
    @discardableResult
    public func write(repeating value: Element, count requested: Int) -> Int {
        let accepted = min(max(requested, 0), freeSpace)
        reserve(accepted)
        var tail = (head + count) % allocated
        for _ in 0..<accepted {
            storage[tail] = value
            tail = tail + 1 == allocated ? 0 : tail + 1
        }
        count += accepted
        return accepted
    }

    /// Removes up to `destination.count` of the oldest elements into `destination`; returns how many.
    @discardableResult
    public func read(into destination: UnsafeMutableBufferPointer<Element>) -> Int {
        let copied = peek(into: destination)
        discard(copied)
        return copied
    }

    /// Copies up to `destination.count` of the oldest elements without removing them; returns how many.
    @discardableResult
    public func peek(into destination: UnsafeMutableBufferPointer<Element>) -> Int {
        let wanted = min(destination.count, count)
        guard wanted > 0, let dst = destination.baseAddress, let store = storage.baseAddress else { return 0 }
        let first = min(wanted, allocated - head)
        dst.update(from: store + head, count: first)
        if wanted > first { (dst + first).update(from: store, count: wanted - first) }
        return wanted
    }

    /// Drops up to `n` of the oldest elements; returns how many were dropped.
    @discardableResult
    public func discard(_ n: Int) -> Int {
        let dropped = min(max(n, 0), count)
        count -= dropped
        head = count == 0 ? 0 : (head + dropped) % allocated
        return dropped
    }

    /// Drops everything.
    public func removeAll() {
        head = 0
        count = 0
    }

    /// The stored elements, oldest first, as up to two contiguous regions (valid until the next mutation).
    public func readableRegions() -> (UnsafeBufferPointer<Element>, UnsafeBufferPointer<Element>) {
        let first = min(count, allocated - head)
        let firstRegion = UnsafeBufferPointer(rebasing: storage[head..<(head + first)])
        let secondRegion = UnsafeBufferPointer(rebasing: storage[0..<(count - first)])
        return (firstRegion, secondRegion)
    }

    /// Grows the storage (doubling, at most to `capacity`) so `incoming` more elements fit.
    private func reserve(_ incoming: Int) {
        let needed = min(count + incoming, capacity)
        guard needed > allocated else { return }
        let grown = min(capacity, max(allocated * 2, needed))
        let fresh = UnsafeMutableBufferPointer<Element>.allocate(capacity: grown)
        let copied = peek(into: fresh)
        storage.deallocate()
        storage = fresh
        allocated = grown
        head = 0
        count = copied
    }

    private func copyIn(_ src: UnsafePointer<Element>, _ n: Int) {
        guard let store = storage.baseAddress else { return }
        let tail = (head + count) % allocated
        let first = min(n, allocated - tail)
        (store + tail).update(from: src, count: first)
        if n > first { store.update(from: src + first, count: n - first) }
        count += n
    }
}

extension RingBuffer where Element == Float {
    /// Adds up to `count` of the oldest samples into `destination` and removes them; returns how
    /// many. A mixer takes a stream's audio this way in one pass, with no copy in between.
    public func read(adding destination: UnsafeMutablePointer<Float>, count wanted: Int) -> Int {
        let (first, second) = readableRegions()
        let fromFirst = min(wanted, first.count)
        if fromFirst > 0, let source = first.baseAddress {
            SampleMath.accumulate(source, into: destination, count: fromFirst)
        }
        let fromSecond = min(wanted - fromFirst, second.count)
        if fromSecond > 0, let source = second.baseAddress {
            SampleMath.accumulate(source, into: destination + fromFirst, count: fromSecond)
        }
        return discard(fromFirst + fromSecond)
    }
}
