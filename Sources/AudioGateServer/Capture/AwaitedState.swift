import Synchronization

/// The lock-guarded state of a queue that one task awaits: it waits only while there is no work,
/// and whoever gives it work takes its continuation under the lock and resumes it after.
protocol AwaitedState {
    /// Whether the waiting task would find something to take (or the end).
    var hasWork: Bool { get }
    /// The task waiting for work.
    var waiter: CheckedContinuation<Void, Never>? { get set }
}

extension AwaitedState {
    /// The stored waiter, to be resumed after the lock is released.
    mutating func takeWaiter() -> CheckedContinuation<Void, Never>? {
        defer { waiter = nil }
        return waiter
    }
}

extension Mutex where Value: AwaitedState {
    /// Returns once the state has work (at once if it has). `onCancel` runs if the waiting task
    /// is cancelled and must give the state work (end it), so the wait ends.
    func waitForWork(onCancel: @Sendable () -> Void) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = withLock { state -> Bool in
                    if state.hasWork { return true }
                    state.waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            onCancel()
        }
    }
}
