import AudioGateDevices
import Logging

/// The audio side of the server: the two device loops and what feeds and drains them.
public final class AudioEngine: Sendable {
    /// The software card `loopback` and `auto` fall back to.
    public let loopbackCard: LoopbackCard
    /// Fan-out of captured audio.
    public let captureHub: CaptureHub
    /// The mixer feeding the speaker.
    public let mixer: PlaybackMixer
    /// The capture device thread.
    public let capture: CaptureLoop
    /// The playback device thread.
    public let playback: PlaybackLoop

    public init(configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger) {
        let card = LoopbackCard()
        let mixer = PlaybackMixer(configuration: configuration, metrics: metrics, logger: logger)
        let hub = CaptureHub(
            configuration: configuration, metrics: metrics, logger: logger, echoReference: mixer.echoReference)
        loopbackCard = card
        captureHub = hub
        self.mixer = mixer
        let captureRequest = configuration.captureRequest
        let playbackRequest = configuration.playbackRequest
        capture = CaptureLoop(
            opener: .resolve(
                configuration.captureDevice, direction: .capture, request: captureRequest, card: card, logger: logger),
            request: captureRequest, sink: hub, demand: hub.demand, logger: logger)
        playback = PlaybackLoop(
            opener: .resolve(
                configuration.playbackDevice, direction: .playback, request: playbackRequest, card: card,
                logger: logger),
            request: playbackRequest, source: mixer, demand: mixer.demand, logger: logger)
    }
}
