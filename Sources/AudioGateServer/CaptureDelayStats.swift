import Synchronization

/// A fixed-bucket histogram of send delays (0.1 ms buckets up to 100 ms) for percentiles in status.
final class CaptureDelayStats: Sendable {
    /// The delay summary reported in `/v1/status`.
    struct Summary: Encodable, Equatable {
        var count: Int
        var p50Ms: Double
        var p99Ms: Double
        var maxMs: Double
    }

    private static let bucketNanoseconds: UInt64 = 100_000
    private static let bucketCount = 1000

    private struct State {
        var buckets = [Int](repeating: 0, count: CaptureDelayStats.bucketCount + 1)
        var count = 0
        var maximum: UInt64 = 0
    }

    private let state = Mutex(State())

    func record(nanoseconds: UInt64) {
        let index = Int(min(nanoseconds / Self.bucketNanoseconds, UInt64(Self.bucketCount)))
        state.withLock { state in
            state.buckets[index] += 1
            state.count += 1
            state.maximum = max(state.maximum, nanoseconds)
        }
    }

    /// Percentiles as bucket upper bounds (to 0.1 ms); delays beyond 100 ms read as the maximum.
    var summary: Summary {
        state.withLock { state in
            let maxMs = Double(state.maximum) / 1e6
            func percentile(_ fraction: Double) -> Double {
                guard state.count > 0 else { return 0 }
                let rank = max(1, Int((fraction * Double(state.count)).rounded(.up)))
                var seen = 0
                for (index, count) in state.buckets.enumerated() {
                    seen += count
                    if seen >= rank {
                        guard index < Self.bucketCount else { return maxMs }
                        return min(maxMs, Double(index + 1) * Double(Self.bucketNanoseconds) / 1e6)
                    }
                }
                return maxMs
            }
            return Summary(count: state.count, p50Ms: percentile(0.5), p99Ms: percentile(0.99), maxMs: maxMs)
        }
    }
}
