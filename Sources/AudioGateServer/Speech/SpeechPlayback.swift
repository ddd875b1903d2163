import AudioGateCore
import Foundation
import Hummingbird
import ServiceLifecycle

/// `POST /v1/say`: the text is synthesized on a speech thread, then queued on a playback stream by
/// the speech service after the texts before it on that stream; the answer goes out once the text
/// is synthesized and handed over (or, with `wait`, once all of it was heard).
struct SpeechPlayback {
    let mixer: PlaybackMixer
    let synthesizer: SpeechSynthesizer
    let service: SpeechService
    /// Most seconds of speech one text produces (`--max-say-seconds`).
    let maximumSeconds: Int

    struct Answer: Encodable {
        var stream: String
        var voice: String
        var durationMs: Int
        var queuedMs: Int
        var playedMs: Int?
        /// Synthesis stopped at `--max-say-seconds`: the rest of the text is not spoken.
        var truncated: Bool
    }

    func run(_ speech: SpeechRequest, wait: Bool) async throws -> Response {
        let engine = try await synthesizer.engine()
        guard engine.hasVoice(speech.voice) else {
            throw SpeechError.unknownVoice("no voice '\(speech.voice)'")
        }
        guard synthesizer.reserve() else {
            throw SpeechError(.busy, "\(SpeechSynthesizer.maximumPending) texts are being spoken; try again shortly")
        }
        let samples: [UInt8]
        let truncated: Bool
        let stream: PlaybackStream
        do {
            (samples, truncated) = try await synthesizer.synthesize(
                text: speech.text, voice: speech.voice, wordsPerMinute: speech.wordsPerMinute, maximumSeconds: maximumSeconds)
            guard samples.count >= engine.format.bytesPerFrame else { throw SpeechError(.badBody, "the text gave no speech") }
            stream = try mixer.acquire(speech.stream)
        } catch {
            synthesizer.release()
            throw error
        }
        let format = engine.format
        let listener = PlaybackListener()
        if wait { stream.addListener(listener) }
        defer { if wait { stream.removeListener(listener) } }
        let feed = SpeechFeed(samples: samples, format: format, stream: stream, mixer: mixer, synthesizer: synthesizer)
        let startPosition = feed.ingest.position
        guard service.start(feed) else {
            feed.abandon()
            throw SpeechError(.unavailable, "the server is shutting down")
        }
        var answer = Answer(
            stream: stream.name, voice: speech.voice,
            durationMs: Int(format.milliseconds(forFrames: samples.count / format.bytesPerFrame).rounded()), queuedMs: 0,
            truncated: truncated)
        if wait {
            try await cancelWhenGracefulShutdown {
                guard try await feed.ended.wait() != .cancelled else { throw CancellationError() }
            }
        }
        answer.queuedMs = Int(stream.queuedMilliseconds.rounded())
        if wait {
            let endPosition = feed.ingest.position
            answer.playedMs = try await cancelWhenGracefulShutdown {
                try await PlaybackUpload.waitUntilHeard(
                    listener: listener, ingest: feed.ingest, start: startPosition, end: endPosition)
            }
        }
        return try JSONResponse.make(answer)
    }
}
