import Foundation

extension Process {
    /// Waits for the process to exit, at most `seconds`, woken by its termination (`waitUntilExit`
    /// called off the main thread spins a run loop at full CPU, which starves the real-time threads
    /// under test).
    public func waitForExit(seconds: Double = .infinity) {
        let exited = DispatchSemaphore(value: 0)
        terminationHandler = { _ in exited.signal() }
        // Foundation clears `isRunning` before it reads the handler, so a process that ended
        // before the handler was set is seen here rather than waited for.
        guard isRunning else { return }
        if seconds.isFinite {
            _ = exited.wait(timeout: .now() + seconds)
        } else {
            exited.wait()
        }
    }
}
