import Foundation

/// Waiting for something a real-time system will do soon.
public enum Poll {
    /// Polls `condition` every 10 ms until it holds or `seconds` pass; returns the elapsed seconds, or nil.
    @discardableResult
    public static func until(seconds: Double, _ condition: () -> Bool) async -> Double? {
        let start = Date()
        while true {
            if condition() { return Date().timeIntervalSince(start) }
            if Date().timeIntervalSince(start) > seconds { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}
