extension PlaybackMixer {
    /// Recent POST-to-speaker latencies.
    var latencySummary: PlaybackLatencySummary? { metrics.latencyLog.summary }

    /// Recent clear-to-silence times.
    var clearToSilenceSummary: PlaybackLatencySummary? { metrics.clearLog.summary }
}
