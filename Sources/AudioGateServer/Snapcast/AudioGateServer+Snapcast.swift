import Logging

extension AudioGateServer {
    /// The Snapcast client when `--snapcast-server` is set.
    static func snapcastClient(configuration: ServerConfiguration, engine: AudioEngine, logger: Logger) -> SnapcastClient? {
        guard configuration.snapcast.isEnabled else { return nil }
        return SnapcastClient(configuration: configuration.snapcast, mixer: engine.mixer, logger: logger)
    }

    /// `snapcast` in `/v1/status`.
    var snapcastStatus: PlayerStatus<SnapcastStatus>? { snapcast?.status }

    /// `snapcast` in `/v1/info`.
    var snapcastInfo: SnapcastInfo? { snapcast?.info }

    /// Copies the client's status to its gauges.
    func refreshSnapcastMetrics() {
        guard let status = snapcastStatus else { return }
        snapcastMetrics?.refresh(from: status)
    }
}
