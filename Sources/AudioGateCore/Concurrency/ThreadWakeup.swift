import Dispatch

/// Wakes a thread that sleeps until there is work: the one way a thread waits (a task waits on a
/// `OneShot` or a continuation). Wakes are counted, so one that lands before the wait is not lost;
/// a woken thread re-checks its condition, so an extra wake costs only a look.
///
/// `signal` never blocks and may be called from any thread, including a real-time one.
public final class ThreadWakeup: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    public init() {}

    /// Wakes the waiting thread, or the next one to wait.
    public func signal() {
        semaphore.signal()
    }

    /// Blocks the calling thread until `signal`.
    public func wait() {
        semaphore.wait()
    }

    /// Blocks until `signal` or `timeout` has passed; returns whether it was signalled.
    public func wait(timeout: Duration) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = max(0, seconds) * 1_000_000_000 + attoseconds / 1_000_000_000
        return semaphore.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success
    }
}
