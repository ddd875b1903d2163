import Prometheus

/// The Snapcast client's gauges in `/metrics`, copied from its status at scrape time.
final class SnapcastMetrics: Sendable {
    private let connected: Gauge
    private let offset: Gauge
    private let jitter: Gauge
    private let queued: Gauge
    private let dropped: Gauge
    private let inserted: Gauge
    private let late: Gauge
    private let connections: Gauge

    init(registry: PrometheusCollectorRegistry) {
        func gauge(_ name: String, _ help: String) -> Gauge {
            registry.makeGauge(descriptor: ServerMetrics.descriptor(name, help: help))
        }
        connected = gauge("audiogate_snapcast_connected", "1 while connected to the snapserver")
        offset = gauge("audiogate_snapcast_clock_offset_seconds", "Snapserver clock minus local clock")
        jitter = gauge("audiogate_snapcast_clock_jitter_seconds", "Median absolute deviation of the clock measurements")
        queued = gauge("audiogate_snapcast_queued_seconds", "Audio held by the snapcast stream")
        dropped = gauge("audiogate_snapcast_frames_dropped", "Frames dropped to follow the snapserver's clock")
        inserted = gauge("audiogate_snapcast_frames_inserted", "Frames inserted to follow the snapserver's clock")
        late = gauge("audiogate_snapcast_late_chunks", "Chunks that arrived too late to play")
        connections = gauge("audiogate_snapcast_connections", "Connections made to the snapserver since start")
    }

    func refresh(from status: SnapcastStatus) {
        connected.set(to: status.connected ? 1 : 0)
        offset.set(to: (status.clockOffsetMs ?? 0) / 1000)
        jitter.set(to: (status.clockJitterMs ?? 0) / 1000)
        queued.set(to: status.queuedMs / 1000)
        dropped.set(to: Double(status.framesDropped))
        inserted.set(to: Double(status.framesInserted))
        late.set(to: Double(status.lateChunks))
        connections.set(to: Double(status.connections))
    }
}
