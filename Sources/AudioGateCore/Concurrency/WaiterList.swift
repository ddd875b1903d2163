/// Producers waiting for something a consumer frees (room in a queue), kept inside the state the
/// consumer locks: the consumer takes them in the same critical section that frees the room and
/// wakes them after unlocking.
///
/// A waiter is how it wants to be woken: a `OneShot` for a task, a `ThreadWakeup` for a thread, a
/// job on its event loop for a channel handler. Waking never blocks the consumer.
public struct WaiterList: Sendable {
    /// Wakes one waiter; runs outside every lock, on the consumer's thread.
    public typealias Wake = @Sendable () -> Void

    private var nextID = 0
    private var entries: [(id: Int, wake: Wake)] = []

    public init() {}

    /// Whether nobody waits.
    public var isEmpty: Bool { entries.isEmpty }

    /// Adds a waiter; the id removes it again.
    public mutating func add(_ wake: @escaping Wake) -> Int {
        nextID &+= 1
        entries.append((nextID, wake))
        return nextID
    }

    /// Removes a waiter that stopped waiting (its task was cancelled); false if it was already woken.
    @discardableResult
    public mutating func remove(_ id: Int) -> Bool {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { return false }
        entries.remove(at: index)
        return true
    }

    /// Takes every waiter, to be woken once the lock is released.
    public mutating func takeAll() -> Wakes {
        guard !entries.isEmpty else { return .none }
        defer { entries.removeAll(keepingCapacity: true) }
        return Wakes(entries.map(\.wake))
    }

    /// Waiters taken from a list, woken outside the lock.
    ///
    /// Inlinable: the device thread makes and runs one per stream every period, nearly always empty.
    public struct Wakes: Sendable {
        @usableFromInline let wakes: [Wake]

        @usableFromInline init(_ wakes: [Wake]) { self.wakes = wakes }

        /// No waiters: what a consumer returns when it freed nothing anyone waits for.
        @inlinable public static var none: Wakes { Wakes([]) }

        /// Wakes them all.
        @inlinable public func run() {
            guard !wakes.isEmpty else { return }
            for wake in wakes { wake() }
        }
    }
}
