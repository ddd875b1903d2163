extension PlaybackMixer {
    /// Recent POST-to-speaker latencies.
    var latencySummary: LatencyHistogram.Summary { metrics.latencySummary.summary }

    /// Recent clear-to-silence times.
    var clearToSilenceSummary: LatencyHistogram.Summary { metrics.clearSummary.summary }
}
