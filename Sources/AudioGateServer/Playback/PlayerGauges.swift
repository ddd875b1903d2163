import Prometheus

/// The gauges every network player has in `/metrics`, named after it
/// (`audiogate_snapcast_connected`, `audiogate_sendspin_frames_dropped`, ...).
struct PlayerGauges: Sendable {
    private let connected: Gauge
    private let offset: Gauge
    private let connections: Gauge
    private let queued: Gauge
    private let dropped: Gauge
    private let inserted: Gauge
    private let late: Gauge

    /// `player` names the gauges; `server` is what it connects to, for their help text.
    init(registry: PrometheusCollectorRegistry, player: String, server: String) {
        func gauge(_ name: String, _ help: String) -> Gauge {
            registry.makeGauge(descriptor: ServerMetrics.descriptor("audiogate_\(player)_\(name)", help: help))
        }
        connected = gauge("connected", "1 while connected to the \(server)")
        offset = gauge("clock_offset_seconds", "The \(server)'s clock minus the local clock")
        connections = gauge("connections", "Connections made to the \(server) since start")
        queued = gauge("queued_seconds", "Audio held by the \(player) stream")
        dropped = gauge("frames_dropped", "Frames dropped to follow the \(server)'s clock")
        inserted = gauge("frames_inserted", "Frames inserted to follow the \(server)'s clock")
        late = gauge("late_chunks", "Chunks that arrived too late to play")
    }

    func refresh<Player>(from status: PlayerStatus<Player>) {
        connected.set(to: status.connected ? 1 : 0)
        offset.set(to: (status.clockOffsetMs ?? 0) / 1000)
        connections.set(to: Double(status.connections))
        queued.set(to: status.playout.queuedMs / 1000)
        dropped.set(to: Double(status.playout.framesDropped))
        inserted.set(to: Double(status.playout.framesInserted))
        late.set(to: Double(status.playout.lateChunks))
    }
}
