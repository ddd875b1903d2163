import Prometheus

/// The Snapcast client's gauges in `/metrics`, copied from its status at scrape time.
final class SnapcastMetrics: Sendable {
    private let player: PlayerGauges
    private let jitter: Gauge

    init(registry: PrometheusCollectorRegistry) {
        player = PlayerGauges(registry: registry, player: "snapcast", server: "snapserver")
        jitter = registry.makeGauge(
            descriptor: ServerMetrics.descriptor(
                "audiogate_snapcast_clock_jitter_seconds", help: "Median absolute deviation of the clock measurements"))
    }

    func refresh(from status: PlayerStatus<SnapcastStatus>) {
        player.refresh(from: status)
        jitter.set(to: (status.player.clockJitterMs ?? 0) / 1000)
    }
}
