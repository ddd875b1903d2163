import Synchronization

/// A value that is set once and awaited by any number of tasks: the one way a task waits for
/// something a thread or another task finishes.
///
/// `fulfill` may be called from any thread, including a real-time one: it never blocks and
/// resumes the waiters outside the lock.
public final class OneShot<Value: Sendable>: Sendable {
    private struct Waiting {
        var nextID = 0
        var waiters: [(id: Int, continuation: CheckedContinuation<Value?, Never>)] = []
    }

    private enum State {
        case waiting(Waiting)
        case done(Value)
    }

    private let state = Mutex(State.waiting(Waiting()))

    public init() {}

    /// Sets the value and wakes every waiter; later calls are ignored. Returns whether this call set it.
    @discardableResult
    public func fulfill(_ value: Value) -> Bool {
        let waiters: [(id: Int, continuation: CheckedContinuation<Value?, Never>)]? = state.withLock { state in
            guard case .waiting(let waiting) = state else { return nil }
            state = .done(value)
            return waiting.waiters
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.continuation.resume(returning: value) }
        return true
    }

    /// The value, once set; nil before.
    public var value: Value? {
        state.withLock { state in
            if case .done(let value) = state { return value }
            return nil
        }
    }

    /// Suspends until the value is set; throws `CancellationError` if the task is cancelled first.
    public func wait() async throws -> Value {
        let id = register()
        let value = await withTaskCancellationHandler {
            await suspend(id: id, cancellable: true)
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Value?, Never>? in
                guard case .waiting(var waiting) = state,
                    let index = waiting.waiters.firstIndex(where: { $0.id == id })
                else { return nil }
                let waiter = waiting.waiters.remove(at: index).continuation
                state = .waiting(waiting)
                return waiter
            }
            waiter?.resume(returning: nil)
        }
        guard let value else { throw CancellationError() }
        return value
    }

    /// Suspends until the value is set, whether or not the task is cancelled meanwhile.
    public func waitIgnoringCancellation() async -> Value {
        // Never nil: only a cancellable wait is resumed without a value.
        await suspend(id: register(), cancellable: false)!
    }

    private func register() -> Int {
        state.withLock { state in
            guard case .waiting(var waiting) = state else { return 0 }
            waiting.nextID += 1
            state = .waiting(waiting)
            return waiting.nextID
        }
    }

    private func suspend(id: Int, cancellable: Bool) async -> Value? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
            let immediate: Value?? = state.withLock { state in
                switch state {
                case .done(let value):
                    return .some(value)
                case .waiting(var waiting):
                    // Cancelled before the continuation existed: the handler found nothing to resume.
                    if cancellable && Task.isCancelled { return .some(nil) }
                    waiting.waiters.append((id, continuation))
                    state = .waiting(waiting)
                    return .none
                }
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }
}
