import AudioGateDevices
import Prometheus

/// The Prometheus registry behind `/metrics`, one per server (no global metrics system, so
/// several servers in one test process do not share counters).
public final class ServerMetrics: Sendable {
    /// Where every metric of this server lives; features add theirs with `registry.make*`.
    public let registry = PrometheusCollectorRegistry()

    private let deviceUp: [PCMDirection: Gauge]
    private let deviceXruns: [PCMDirection: Gauge]
    private let deviceReopens: [PCMDirection: Gauge]
    private let deviceFrames: [PCMDirection: Gauge]

    /// A metric named in full (`audiogate_...`), as every metric of the server is.
    static func descriptor(_ name: String, help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    public init() {
        var up: [PCMDirection: Gauge] = [:]
        var xruns: [PCMDirection: Gauge] = [:]
        var reopens: [PCMDirection: Gauge] = [:]
        var frames: [PCMDirection: Gauge] = [:]
        for direction in [PCMDirection.capture, .playback] {
            let labels = [("direction", direction.rawValue)]
            up[direction] = registry.makeGauge(
                descriptor: ServerMetrics.descriptor("audiogate_device_running", help: "1 while the device is open and running"), labels: labels)
            xruns[direction] = registry.makeGauge(
                descriptor: ServerMetrics.descriptor("audiogate_device_xruns", help: "Device overruns/underruns recovered"), labels: labels)
            reopens[direction] = registry.makeGauge(
                descriptor: ServerMetrics.descriptor("audiogate_device_reopens", help: "Times the device was reopened after loss"), labels: labels)
            frames[direction] = registry.makeGauge(
                descriptor: ServerMetrics.descriptor("audiogate_device_frames", help: "Frames moved through the device"), labels: labels)
        }
        deviceUp = up
        deviceXruns = xruns
        deviceReopens = reopens
        deviceFrames = frames
    }

    /// Copies device status into gauges (called at scrape time: the device threads never touch metrics).
    func refresh(from statuses: [DeviceStatus]) {
        for status in statuses {
            deviceUp[status.direction]?.set(to: status.state == .running ? 1.0 : 0.0)
            deviceXruns[status.direction]?.set(to: Double(status.xruns))
            deviceReopens[status.direction]?.set(to: Double(status.reopens))
            deviceFrames[status.direction]?.set(to: Double(status.frames))
        }
    }
}
