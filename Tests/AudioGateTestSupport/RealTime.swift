import Foundation

/// Helpers for tests that depend on the machine keeping real time.
public enum RealTime {
    /// Runs `body`; if it throws while hypervisor steal over that attempt exceeded `threshold`
    /// percent, logs the figure and runs it once more (whose outcome is final).
    ///
    /// An idle machine steals under 0.1%; steal comes in bursts, so a few percent averaged over an
    /// attempt can hide a stretch of tens of milliseconds with no CPU, longer than a device buffer.
    public static func retryingOnSteal<T>(
        threshold: Double = 1,
        _ body: () async throws -> T
    ) async throws -> T {
        let before = Steal.sample()
        do {
            return try await body()
        } catch {
            let steal = Steal.sample().percent(since: before)
            guard steal > threshold else { throw error }
            log("steal \(String(format: "%.1f", steal))% exceeded \(threshold)% during a failed attempt (\(error)); retrying once")
            let retryStart = Steal.sample()
            do {
                return try await body()
            } catch {
                log(String(format: "retry failed too (steal %.1f%%)", Steal.sample().percent(since: retryStart)))
                throw error
            }
        }
    }

    /// Writes a line to standard error (visible in `swift test` output).
    public static func log(_ line: String) {
        FileHandle.standardError.write(Data(("[audiogate-test] " + line + "\n").utf8))
    }
}
