import Prometheus

/// The playback side's Prometheus metrics, registered on the server's registry.
final class PlaybackMetrics: Sendable {
    let streams: Gauge
    let ducking: Gauge
    let underruns: Counter
    let bytesIn: Counter
    let latency: DurationHistogram
    let clearToSilence: DurationHistogram
    /// The same latencies, for percentiles in `/v1/status`.
    let latencySummary = LatencyHistogram()
    let clearSummary = LatencyHistogram()

    init(registry: PrometheusCollectorRegistry) {
        let buckets: [Duration] = [5, 10, 20, 30, 40, 50, 60, 80, 100, 150, 200, 300, 500, 1000].map { .milliseconds($0) }
        func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "audiogate", subsystem: "playback", metricName: metric, unitName: unit, helpText: help)
        }
        streams = registry.makeGauge(descriptor: name("streams", "", "Playback streams in use"))
        ducking = registry.makeGauge(
            descriptor: name("ducking", "", "1 while music streams are lowered (or ramping back) under a voice stream"))
        underruns = registry.makeCounter(
            descriptor: name("underruns", "total", "Times a stream's queue ran dry mid-audio and resumed"))
        bytesIn = registry.makeCounter(descriptor: name("bytes", "total", "PCM bytes received for playback"))
        latency = registry.makeDurationHistogram(
            descriptor: name("latency", "seconds", "From the first byte of a POST to its first sample leaving the card"),
            buckets: buckets)
        clearToSilence = registry.makeDurationHistogram(
            descriptor: name(
                "clear_to_silence", "seconds", "From a clear or DELETE to the flushed stream's last audio leaving the card"),
            buckets: buckets)
    }

    /// Called on the playback thread when a POST's first sample reached the speaker.
    func recordLatency(nanoseconds: Int64) {
        latency.record(.nanoseconds(nanoseconds))
        latencySummary.record(nanoseconds: UInt64(max(nanoseconds, 0)))
    }

    /// Called on the playback thread when the card went silent after a clear.
    func recordClearToSilence(nanoseconds: Int64) {
        clearToSilence.record(.nanoseconds(nanoseconds))
        clearSummary.record(nanoseconds: UInt64(max(nanoseconds, 0)))
    }
}
