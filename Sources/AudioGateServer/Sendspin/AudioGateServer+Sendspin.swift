import Logging

extension AudioGateServer {
    /// The Sendspin player when `--sendspin-server` or `--sendspin-port` is set.
    static func sendspinClient(
        configuration: ServerConfiguration, engine: AudioEngine, speech: SpeechService, logger: Logger
    ) -> SendspinClient? {
        guard configuration.sendspin.isEnabled else { return nil }
        var settings = configuration.sendspin
        settings.dataDirectory = configuration.dataDirectory
        if settings.listen != nil, settings.listen?.host == nil { settings.listen?.host = configuration.host }
        let hub = engine.captureHub
        // The dynamic pairing code is said on the loudspeaker too, as `/v1/say` would say it.
        let voice = SpeechPlayback(
            mixer: engine.mixer, synthesizer: .shared, service: speech, maximumSeconds: configuration.limits.maxSaySeconds)
        let speak: @Sendable (String) async throws -> Void = { text in
            _ = try await voice.run(SpeechRequest(text: text, stream: SendspinClient.pairingCodeStream), wait: false)
        }
        return SendspinClient(configuration: settings, mixer: engine.mixer, logger: logger, speak: speak) { hub.announceMusic($0) }
    }

    /// `sendspin` in `/v1/status`.
    var sendspinStatus: PlayerStatus<SendspinStatus>? { sendspin?.status }

    /// `sendspin` in `/v1/info`.
    var sendspinInfo: SendspinInfo? { sendspin?.info }

    /// Copies the player's status to its gauges.
    func refreshSendspinMetrics() {
        guard let status = sendspinStatus else { return }
        sendspinMetrics?.refresh(from: status)
    }
}
