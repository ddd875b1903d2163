#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The server's monotonic clock (CLOCK_MONOTONIC): the time base of `timestamp_ms` in the API.
public enum MonotonicClock {
    /// Nanoseconds since an arbitrary fixed point (boot on Linux).
    public static func nowNanoseconds() -> UInt64 {
        var now = timespec()
        // CLOCK_MONOTONIC cannot fail with a valid pointer; a zero reading would still be harmless.
        _ = clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    /// Milliseconds since the same fixed point, with sub-millisecond precision.
    public static func nowMilliseconds() -> Double {
        Double(nowNanoseconds()) / 1_000_000
    }
}
