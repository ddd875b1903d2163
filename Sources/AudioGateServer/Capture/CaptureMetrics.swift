import AudioGateCore
import Prometheus
import Synchronization

/// The capture fan-out's Prometheus metrics and the send-delay summary shown in `/v1/status`.
///
/// Only client tasks record here; the capture thread never touches metrics.
final class CaptureMetrics: Sendable {
    /// Upper bounds of the send-delay histogram buckets.
    static let delayBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(15), .milliseconds(20), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1),
    ]

    private let registry: PrometheusCollectorRegistry
    private let subscribers: Gauge
    private let formatSubscribers = Mutex<[AudioFormat: Gauge]>([:])
    private let dropped: Counter
    private let lost: Gauge
    /// Send delays, for percentiles in `/v1/status` and the `audiogate_capture_send_delay_seconds` histogram.
    let delays = LatencyHistogram()

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        subscribers = registry.makeGauge(
                descriptor: ServerMetrics.descriptor("audiogate_capture_subscribers", help: "Connected capture clients (WebSocket and HTTP)"))
        dropped = registry.makeCounter(
            descriptor: ServerMetrics.descriptor("audiogate_capture_dropped_ms_total", help: "Milliseconds of audio dropped from slow capture clients' queues"))
        lost = registry.makeGauge(
                descriptor: ServerMetrics.descriptor("audiogate_capture_lost_ms", help: "Milliseconds of capture lost to device xruns and outages"))
    }

    /// Publishes subscriber counts, total and per client format.
    func setSubscribers(_ counts: [AudioFormat: Int]) {
        subscribers.set(to: Double(counts.values.reduce(0, +)))
        formatSubscribers.withLock { gauges in
            for format in Set(gauges.keys).union(counts.keys) {
                let gauge = gauges[format] ?? registry.makeGauge(
                descriptor: ServerMetrics.descriptor("audiogate_capture_format_subscribers", help: "Capture clients per client format"), labels: [
                        ("rate", String(format.rate)), ("channels", String(format.channels)),
                        ("format", format.sampleFormat.rawValue),
                    ])
                gauges[format] = gauge
                gauge.set(to: Double(counts[format] ?? 0))
            }
        }
    }

    /// Counts audio dropped from a client's queue.
    func recordDropped(milliseconds: Int) {
        dropped.increment(by: Int64(milliseconds))
    }

    /// Publishes the total capture lost to xruns and outages.
    func setLost(milliseconds: Double) {
        lost.set(to: milliseconds)
    }

    /// Records one chunk's read-to-send delay.
    func recordSendDelay(nanoseconds: UInt64) {
        delays.record(nanoseconds: nanoseconds)
    }

    /// Records the read-to-send delays of one event loop's batch.
    func recordSendDelays(nanoseconds batch: [UInt64]) {
        delays.record(nanoseconds: batch)
    }

    /// Appends the metrics kept outside the registry (the send-delay histogram) to a scrape.
    func emit(into buffer: inout [UInt8]) {
        delays.emitPrometheus(
            name: "audiogate_capture_send_delay_seconds",
            help: "Delay from a chunk's last sample being read from the device to its send",
            bounds: Self.delayBuckets, into: &buffer)
    }
}
