import AudioGateCore
import Foundation

/// Runs a fuzz loop: the case count (`AUDIOGATE_FUZZ_CASES`, which `make fuzz` sets to 100000,
/// else the test's short default), the time taken, and one report line per decoder.
public struct FuzzRun {
    /// Cases to run.
    public let cases: Int
    /// Outcome name (an error code, "decoded", ...) to how many cases ended so.
    public private(set) var outcomes: [String: Int] = [:]

    /// A run of `AUDIOGATE_FUZZ_CASES` cases, or `defaultCases` when it is not set.
    public init(defaultCases: Int) {
        cases = ProcessInfo.processInfo.environment["AUDIOGATE_FUZZ_CASES"].flatMap(Int.init).map { max($0, 1) } ?? defaultCases
    }

    /// Calls `body` with each case index; `body` returns the case's outcome. Logs cases, seconds and
    /// cases per second under `name`, and returns the outcomes.
    @discardableResult
    public mutating func run(_ name: String, _ body: (Int) throws -> String) rethrows -> [String: Int] {
        let started = MonotonicClock.nowMilliseconds()
        for index in 0..<cases { outcomes[try body(index), default: 0] += 1 }
        let seconds = (MonotonicClock.nowMilliseconds() - started) / 1000
        let summary = outcomes.sorted { $0.value > $1.value }.prefix(6).map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        RealTime.log(
            "fuzz \(name): \(cases) cases in \(String(format: "%.1f", seconds)) s "
                + "(\(String(format: "%.0f", Double(cases) / max(seconds, 0.001))) cases/s): \(summary)")
        return outcomes
    }
}
