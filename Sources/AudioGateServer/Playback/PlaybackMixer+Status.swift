extension PlaybackMixer {
    /// Recent POST-to-speaker latencies.
    var latencySummary: LatencyHistogram.Summary { metrics.latencySummary.summary }

    /// Recent clear-to-silence times.
    var clearToSilenceSummary: LatencyHistogram.Summary { metrics.clearSummary.summary }

    /// Every stream with its role, for `/v1/status`.
    var streamStatus: [PlaybackStreamStatus] {
        registry.withLock { $0.list }.map { stream in
            let timing = stream.timing
            return PlaybackStreamStatus(
                name: stream.name, role: stream.role, timed: timing != nil,
                queuedMs: timing?.bufferedMilliseconds ?? stream.queuedMilliseconds, timing: timing)
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
