import AudioGateCore
import Logging
import NIOCore
import Synchronization

/// One snd connection: `audio-start`, `audio-chunk` and `audio-stop` are queued on a named playback
/// stream (mixed with everything else, gapless across chunks; see `WyomingService.takeStreamName`);
/// each `audio-stop` is answered with `played` once its audio has left the speaker (or the stream
/// was cleared).
struct WyomingSndSession: Sendable {
    let mixer: PlaybackMixer
    let configuration: WyomingConfiguration
    /// The playback stream this connection plays on.
    let stream: String
    let logger: Logger

    /// The format `describe` advertises: what Piper, Home Assistant's usual TTS, produces.
    static let advertised = (rate: 22050, width: 2, channels: 1)

    /// `audio-stop`s whose `played` is still owed.
    private final class Owed: Sendable {
        let count = Atomic<Int>(0)
    }

    func run(_ connection: WyomingService.Connection) async throws {
        let stream = try mixer.acquire(self.stream)
        defer { mixer.release(stream) }
        let listener = PlaybackListener()
        stream.addListener(listener)
        defer { stream.removeListener(listener) }
        let owed = Owed()
        try await connection.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await event in listener.events {
                        switch event {
                        case .mark:
                            // Only this task takes from the count, so a positive load stays positive.
                            guard owed.count.load(ordering: .relaxed) > 0 else { continue }
                            owed.count.wrappingSubtract(1, ordering: .relaxed)
                            try await outbound.write(WyomingEvent(type: WyomingEvent.Kind.played))
                        case .cleared:
                            // A clear (barge-in) ends every pending playback: nothing more of it will be heard.
                            for _ in 0..<owed.count.exchange(0, ordering: .relaxed) {
                                try await outbound.write(WyomingEvent(type: WyomingEvent.Kind.played))
                            }
                        case .started, .drained, .error:
                            break
                        }
                    }
                }
                defer { group.cancelAll() }
                try await read(inbound, outbound: outbound, stream: stream, listener: listener, owed: owed)
            }
        }
    }

    private func read(
        _ inbound: NIOAsyncChannelInboundStream<WyomingEvent>, outbound: NIOAsyncChannelOutboundWriter<WyomingEvent>,
        stream: PlaybackStream, listener: PlaybackListener, owed: Owed
    ) async throws {
        let ingest = PlaybackIngest(
            stream: stream, format: AudioFormat(rate: Self.advertised.rate, channels: Self.advertised.channels, sampleFormat: .s16le),
            mixFormat: mixer.mixFormatProvider)
        var started: AudioFormat?
        for try await event in inbound {
            switch event.type {
            case WyomingEvent.Kind.describe:
                let format = Self.advertised
                try await outbound.write(WyomingInfo.snd(rate: format.rate, width: format.width, channels: format.channels))
            case WyomingEvent.Kind.ping:
                try await outbound.write(WyomingEvent(type: WyomingEvent.Kind.pong, data: event.data))
            case WyomingEvent.Kind.audioStart:
                started = try Self.format(of: event, fallback: nil)
                ingest.dropPartialFrame()
            case WyomingEvent.Kind.audioChunk:
                let format = try Self.format(of: event, fallback: started)
                // A chunk that ends mid-frame leaves the partial frame in the ingest for the next one.
                guard let payload = event.payload else { continue }
                _ = try await ingest.write(payload, format: format)
            case WyomingEvent.Kind.audioStop:
                let limit = configuration.limits.maxPendingPlayed
                guard owed.count.load(ordering: .relaxed) < limit else {
                    throw WyomingError(.tooManyPending, "more than \(limit) audio-stop events wait for played")
                }
                started = nil
                ingest.finish()
                owed.count.wrappingAdd(1, ordering: .relaxed)
                guard ingest.mark("wyoming-played", listener: listener) else {
                    owed.count.wrappingSubtract(1, ordering: .relaxed)
                    throw WyomingError(
                        .tooManyPending, "stream '\(stream.name)' already holds \(stream.maxPendingMarks) marks waiting to be heard")
                }
            case let type where WyomingInfo.protocolEvents.contains(type):
                logger.debug("wyoming snd ignores '\(type)'")
            default:
                throw WyomingError(.unexpectedEvent, "unknown event type '\(event.type.prefix(64))'")
            }
        }
    }

    /// The audio format of an `audio-start` or `audio-chunk` (a chunk without one uses its start's).
    static func format(of event: WyomingEvent, fallback: AudioFormat?) throws(WyomingError) -> AudioFormat {
        let rate = event.data["rate"]?.int
        let width = event.data["width"]?.int
        let channels = event.data["channels"]?.int
        if rate == nil, width == nil, channels == nil, let fallback { return fallback }
        guard let rate, PlaybackParameters.rates.contains(rate) else {
            throw WyomingError(.badAudio, "'\(event.type)' rate must be \(PlaybackParameters.rates.lowerBound)-\(PlaybackParameters.rates.upperBound) Hz")
        }
        guard let width, let sampleFormat = WyomingConfiguration.sampleFormat(width: width) else {
            throw WyomingError(.badAudio, "'\(event.type)' width must be 1-4 bytes")
        }
        guard let channels, ClientFormats.channels.contains(channels) else {
            throw WyomingError(.badAudio, "'\(event.type)' channels must be 1 or 2")
        }
        return AudioFormat(rate: rate, channels: channels, sampleFormat: sampleFormat)
    }
}
