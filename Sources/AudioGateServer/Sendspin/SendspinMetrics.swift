import Prometheus

/// The Sendspin player's gauges in `/metrics`, copied from its status at scrape time.
final class SendspinMetrics: Sendable {
    private let connected: Gauge
    private let converged: Gauge
    private let offset: Gauge
    private let error: Gauge
    private let queued: Gauge
    private let late: Gauge
    private let volume: Gauge
    private let connections: Gauge

    init(registry: PrometheusCollectorRegistry) {
        func gauge(_ name: String, _ help: String) -> Gauge {
            registry.makeGauge(descriptor: ServerMetrics.descriptor(name, help: help))
        }
        connected = gauge("audiogate_sendspin_connected", "1 while connected to the Sendspin server and activated")
        converged = gauge("audiogate_sendspin_clock_converged", "1 once the time filter has converged")
        offset = gauge("audiogate_sendspin_clock_offset_seconds", "Sendspin server clock minus local clock")
        error = gauge("audiogate_sendspin_clock_error_seconds", "Standard deviation of the time filter's offset")
        queued = gauge("audiogate_sendspin_queued_seconds", "Audio held by the sendspin stream")
        late = gauge("audiogate_sendspin_late_chunks", "Chunks that arrived too late to play")
        volume = gauge("audiogate_sendspin_volume", "Volume 0-100 the server set")
        connections = gauge("audiogate_sendspin_connections", "Connections made to the Sendspin server since start")
    }

    func refresh(from status: SendspinStatus) {
        connected.set(to: status.connected ? 1 : 0)
        converged.set(to: status.clockConverged ? 1 : 0)
        offset.set(to: (status.clockOffsetMs ?? 0) / 1000)
        error.set(to: (status.clockErrorMs ?? 0) / 1000)
        queued.set(to: status.queuedMs / 1000)
        late.set(to: Double(status.lateChunks))
        volume.set(to: Double(status.volume))
        connections.set(to: Double(status.connections))
    }
}
