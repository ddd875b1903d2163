import Foundation

extension Process {
    /// Waits for the process to exit, at most `seconds`, by polling: `waitUntilExit` called off the
    /// main thread spins a run loop at full CPU, which starves the real-time threads under test.
    public func waitByPolling(seconds: Double = .infinity) {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning && Date() < deadline { usleep(5000) }
    }
}
