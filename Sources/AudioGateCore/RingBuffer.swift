/// A fixed-capacity FIFO of trivially copyable elements whose storage is allocated once, in init.
///
/// Not thread-safe and deliberately not Sendable: share it through `Synchronization.Mutex`.
/// No method allocates, so it is safe on a real-time device thread.
public final class RingBuffer<Element: BitwiseCopyable> {
    /// Most elements the buffer can hold.
    public let capacity: Int
    private let storage: UnsafeMutableBufferPointer<Element>
    private var head = 0
    /// Elements currently stored.
    public private(set) var count = 0

    /// Allocates storage for `capacity` elements (at least 1).
    public init(capacity: Int) {
        self.capacity = max(capacity, 1)
        storage = .allocate(capacity: self.capacity)
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
        var tail = (head + count) % capacity
        for _ in 0..<accepted {
            storage[tail] = value
            tail = tail + 1 == capacity ? 0 : tail + 1
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
        let first = min(wanted, capacity - head)
        dst.update(from: store + head, count: first)
        if wanted > first { (dst + first).update(from: store, count: wanted - first) }
        return wanted
    }

    /// Drops up to `n` of the oldest elements; returns how many were dropped.
    @discardableResult
    public func discard(_ n: Int) -> Int {
        let dropped = min(max(n, 0), count)
        count -= dropped
        head = count == 0 ? 0 : (head + dropped) % capacity
        return dropped
    }

    /// Drops everything.
    public func removeAll() {
        head = 0
        count = 0
    }

    /// The stored elements, oldest first, as up to two contiguous regions (valid until the next mutation).
    public func readableRegions() -> (UnsafeBufferPointer<Element>, UnsafeBufferPointer<Element>) {
        let first = min(count, capacity - head)
        let firstRegion = UnsafeBufferPointer(rebasing: storage[head..<(head + first)])
        let secondRegion = UnsafeBufferPointer(rebasing: storage[0..<(count - first)])
        return (firstRegion, secondRegion)
    }

    private func copyIn(_ src: UnsafePointer<Element>, _ n: Int) {
        guard let store = storage.baseAddress else { return }
        let tail = (head + count) % capacity
        let first = min(n, capacity - tail)
        (store + tail).update(from: src, count: first)
        if n > first { store.update(from: src + first, count: n - first) }
        count += n
    }
}
