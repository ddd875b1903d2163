import Foundation
import Synchronization

/// A dedicated OS thread for blocking device I/O, joinable from async code.
final class DeviceThread: Sendable {
    private struct State {
        var finished = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    init(name: String, body: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            // On Linux a name set before `start` never reaches the kernel; set from inside, it does.
            Thread.current.name = name
            body()
            let waiters = self.state.withLock { state in
                state.finished = true
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Returns once the thread's body has returned.
    func join() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finished = state.withLock { state in
                if !state.finished { state.waiters.append(continuation) }
                return state.finished
            }
            if finished { continuation.resume() }
        }
    }
}
