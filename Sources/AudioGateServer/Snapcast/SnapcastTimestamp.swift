/// Snapcast's `tv`: seconds and microseconds of a sender's monotonic clock, as on the wire.
public struct SnapcastTimestamp: Sendable, Equatable {
    public var seconds: Int32
    public var microseconds: Int32

    public init(seconds: Int32, microseconds: Int32) {
        self.seconds = seconds
        self.microseconds = microseconds
    }

    /// CLOCK_MONOTONIC nanoseconds, truncated to microseconds as snapclient sends them.
    public init(nanoseconds: UInt64) {
        let micro = nanoseconds / 1000
        // The wire field is 32 bits of seconds: a monotonic clock reaches that after 68 years of uptime.
        seconds = Int32(truncatingIfNeeded: micro / 1_000_000)
        microseconds = Int32(micro % 1_000_000)
    }

    /// The time in microseconds (either field may be negative in a difference).
    public var totalMicroseconds: Int64 { Int64(seconds) * 1_000_000 + Int64(microseconds) }
}
