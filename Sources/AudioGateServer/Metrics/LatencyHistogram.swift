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

    private struct State {
        var histogram = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: LatencyHistogram.highestMicroseconds)
        /// Every latency recorded, in full, for the Prometheus `_sum`.
        var sumNanoseconds: UInt64 = 0
    }

    private static let highestMicroseconds: UInt64 = 60_000_000
    private let state = Mutex(State())

    /// Records one latency; values beyond a minute count as a minute.
    func record(nanoseconds: UInt64) {
        state.withLock { state in
            _ = state.histogram.record(Self.microseconds(nanoseconds))
            state.sumNanoseconds &+= nanoseconds
        }
    }

    /// Records several latencies under one lock.
    func record(nanoseconds batch: [UInt64]) {
        state.withLock { state in
            for nanoseconds in batch {
                _ = state.histogram.record(Self.microseconds(nanoseconds))
                state.sumNanoseconds &+= nanoseconds
            }
        }
    }

    private static func microseconds(_ nanoseconds: UInt64) -> UInt64 {
        min(max(nanoseconds / 1000, 1), highestMicroseconds)
    }

    /// Percentiles to 0.01 ms; zeros before the first value.
    var summary: Summary {
        state.withLock { state in
            let histogram = state.histogram
            func milliseconds(_ microseconds: UInt64) -> Double { (Double(microseconds) / 10).rounded() / 100 }
            guard histogram.totalCount > 0 else { return Summary(count: 0, p50Ms: 0, p99Ms: 0, maxMs: 0) }
            return Summary(
                count: Int(histogram.totalCount), p50Ms: milliseconds(histogram.valueAtPercentile(50)),
                p99Ms: milliseconds(histogram.valueAtPercentile(99)), maxMs: milliseconds(histogram.max))
        }
    }

    /// Writes the latencies as a Prometheus histogram in seconds, with cumulative buckets at
    /// `bounds` (counted to HdrHistogram's three significant digits).
    ///
    /// One record per chunk per client is the capture fan-out's hottest metric; counting buckets at
    /// scrape time from this histogram costs nothing per record, where a second, Prometheus-side
    /// histogram cost five times the record itself.
    func emitPrometheus(name: String, help: String, bounds: [Duration], into buffer: inout [UInt8]) {
        let (buckets, count, sum) = state.withLock { state in
            let counts = bounds.map { state.histogram.count(within: 0...UInt64(max($0 / .microseconds(1), 0))) }
            return (counts, state.histogram.totalCount, state.sumNanoseconds)
        }
        var text = "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        for (bound, bucket) in zip(bounds, buckets) {
            text += "\(name)_bucket{le=\"\(bound / .seconds(1))\"} \(bucket)\n"
        }
        text += "\(name)_bucket{le=\"+Inf\"} \(count)\n"
        text += "\(name)_sum \(Double(sum) / 1e9)\n\(name)_count \(count)\n"
        buffer.append(contentsOf: text.utf8)
    }
}
