import Histogram
import Synchronization

/// One kind of latency (send delay, playback latency, clear to silence) since start, with the
/// percentiles every latency in `/v1/status` reports.
///
/// `record` may run on a device thread: HdrHistogram records into counts allocated at init, in
/// constant time, with 3 significant digits from 1 µs to a minute.
final class LatencyHistogram: Sendable {
    /// The one shape of a latency in `/v1/status`.
    struct Summary: Encodable, Equatable, Sendable {
        var count: Int
        var p50Ms: Double
        var p99Ms: Double
        var maxMs: Double
    }

    private static let highestMicroseconds: UInt64 = 60_000_000
    private let histogram = Mutex(
        Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: LatencyHistogram.highestMicroseconds))

    /// Records one latency; values beyond a minute count as a minute.
    func record(nanoseconds: UInt64) {
        histogram.withLock { _ = $0.record(Self.microseconds(nanoseconds)) }
    }

    /// Records several latencies under one lock.
    func record(nanoseconds batch: [UInt64]) {
        histogram.withLock { histogram in
            for nanoseconds in batch { _ = histogram.record(Self.microseconds(nanoseconds)) }
        }
    }

    private static func microseconds(_ nanoseconds: UInt64) -> UInt64 {
        min(max(nanoseconds / 1000, 1), highestMicroseconds)
    }

    /// Percentiles to 0.01 ms; zeros before the first value.
    var summary: Summary {
        histogram.withLock { histogram in
            func milliseconds(_ microseconds: UInt64) -> Double { (Double(microseconds) / 10).rounded() / 100 }
            guard histogram.totalCount > 0 else { return Summary(count: 0, p50Ms: 0, p99Ms: 0, maxMs: 0) }
            return Summary(
                count: Int(histogram.totalCount), p50Ms: milliseconds(histogram.valueAtPercentile(50)),
                p99Ms: milliseconds(histogram.valueAtPercentile(99)), maxMs: milliseconds(histogram.max))
        }
    }
}
