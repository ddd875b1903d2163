import Synchronization

/// The most recent latency measurements of one kind, for exact percentiles in `/v1/status`.
///
/// `record` runs on the playback thread: it only writes into storage allocated in init.
final class PlaybackLatencyLog: Sendable {
    private struct State {
        var values: [Double]
        var next = 0
        var count = 0
        var total = 0
    }

    private let state: Mutex<State>
    private let capacity: Int

    init(capacity: Int = 2048) {
        self.capacity = capacity
        state = Mutex(State(values: [Double](repeating: 0, count: capacity)))
    }

    func record(milliseconds: Double) {
        state.withLock { state in
            state.values[state.next] = milliseconds
            state.next = (state.next + 1) % capacity
            state.count = min(state.count + 1, capacity)
            state.total += 1
        }
    }

    /// Percentiles over the kept measurements, nil before the first one.
    var summary: PlaybackLatencySummary? {
        let (values, total) = state.withLock { state in (Array(state.values.prefix(state.count)), state.total) }
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        func percentile(_ p: Double) -> Double {
            let index = min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))
            return (sorted[index] * 10).rounded() / 10
        }
        return PlaybackLatencySummary(
            count: total, p50: percentile(0.5), p99: percentile(0.99), max: (sorted[sorted.count - 1] * 10).rounded() / 10)
    }
}

/// Percentiles of recent measurements in milliseconds (`count` counts all since start).
struct PlaybackLatencySummary: Encodable, Sendable {
    var count: Int
    var p50: Double
    var p99: Double
    var max: Double
}
