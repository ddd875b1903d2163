extension PlaybackMixer {
    /// Recent POST-to-speaker latencies.
    var latencySummary: LatencyHistogram.Summary { metrics.latencySummary.summary }

    /// Recent clear-to-silence times.
    var clearToSilenceSummary: LatencyHistogram.Summary { metrics.clearSummary.summary }

    /// Every stream with its role, for `/v1/status`.
    var streamStatus: [PlaybackStreamStatus] {
        let (streams, timed) = registry.withLock { ($0.list, $0.timed) }
        return streams.map { PlaybackStreamStatus(name: $0.name, role: $0.role, timed: false, queuedMs: $0.queuedMilliseconds) }
            + timed.map { stream in
                let statistics = stream.statistics
                return PlaybackStreamStatus(
                    name: stream.name, role: stream.role, timed: true, queuedMs: statistics.bufferedMilliseconds,
                    timing: statistics)
            }
    }

    /// Whether music is lowered under a voice, and by how much.
    var duckingStatus: DuckingStatus {
        DuckingStatus(active: duckingActive.load(ordering: .relaxed), duckDb: configuration.duckDecibels)
    }
}

/// One playback stream in `/v1/status`.
struct PlaybackStreamStatus: Encodable {
    var name: String
    var role: PlaybackRole
    /// Whether its audio carries presentation times (the Snapcast stream).
    var timed: Bool
    var queuedMs: Double
    /// A timed stream's sync figures.
    var timing: TimedPlaybackStatistics?
}

/// `ducking` in `/v1/status`.
struct DuckingStatus: Encodable {
    /// Music is lowered (or on its way down or back up) because a voice stream plays.
    var active: Bool
    var duckDb: Double
}
