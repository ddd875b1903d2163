import Prometheus

/// The Sendspin player's gauges in `/metrics`, copied from its status at scrape time.
final class SendspinMetrics: Sendable {
    private let player: PlayerGauges
    private let converged: Gauge
    private let error: Gauge
    private let volume: Gauge

    init(registry: PrometheusCollectorRegistry) {
        func gauge(_ name: String, _ help: String) -> Gauge {
            registry.makeGauge(descriptor: ServerMetrics.descriptor(name, help: help))
        }
        player = PlayerGauges(registry: registry, player: "sendspin", server: "Sendspin server")
        converged = gauge("audiogate_sendspin_clock_converged", "1 once the time filter has converged")
        error = gauge("audiogate_sendspin_clock_error_seconds", "Standard deviation of the time filter's offset")
        volume = gauge("audiogate_sendspin_volume", "Volume 0-100 the server set")
    }

    func refresh(from status: PlayerStatus<SendspinStatus>) {
        player.refresh(from: status)
        converged.set(to: status.player.clockConverged ? 1 : 0)
        error.set(to: (status.player.clockErrorMs ?? 0) / 1000)
        volume.set(to: Double(status.player.volume))
    }
}
