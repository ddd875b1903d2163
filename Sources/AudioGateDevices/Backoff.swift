/// Reopen delays: 50 ms doubling to 2 s, then 2 s forever.
public struct Backoff: Sendable {
    static let initialMilliseconds = 50
    static let maximumMilliseconds = 2000

    public private(set) var nextMilliseconds = Backoff.initialMilliseconds
    /// Failed attempts since the last success.
    public private(set) var failures = 0

    /// A schedule at its first step.
    public init() {}

    /// The delay before the next attempt, advancing the schedule.
    public mutating func next() -> Int {
        let delay = nextMilliseconds
        nextMilliseconds = min(nextMilliseconds * 2, Self.maximumMilliseconds)
        failures += 1
        return delay
    }

    /// True once the schedule has reached its ceiling: the device has been gone for seconds.
    public var exhausted: Bool { nextMilliseconds >= Self.maximumMilliseconds }

    public mutating func reset() {
        nextMilliseconds = Self.initialMilliseconds
        failures = 0
    }
}
