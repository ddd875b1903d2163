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

    struct Answer: Encodable {
        var stream: String
        var voice: String
        var durationMs: Int
        var queuedMs: Int
        var playedMs: Int?
    }

    func run(_ speech: SpeechRequest, wait: Bool) async throws -> Response {
        let engine = try await engineOrError()
        guard engine.hasVoice(speech.voice) else {
            throw APIError(speech: SpeechError(.unknownVoice, "no voice '\(speech.voice)'"))
        }
        guard synthesizer.reserve() else {
            throw APIError(.tooManyRequests, "\(SpeechSynthesizer.maximumPending) texts are being spoken; try again shortly")
        }
        let stream: PlaybackStream
        do {
            stream = try mixer.acquire(speech.stream)
        } catch {
            synthesizer.release()
            throw error
        }
        let samples: [UInt8]
        do {
            samples = try await synthesizer.synthesize(
                text: speech.text, voice: speech.voice, wordsPerMinute: speech.wordsPerMinute)
        } catch {
            mixer.release(stream)
            synthesizer.release()
            if let error = error as? SpeechError { throw APIError(speech: error) }
            throw error
        }
        let format = engine.format
        guard samples.count >= format.bytesPerFrame else {
            mixer.release(stream)
            synthesizer.release()
            throw APIError(.badBody, "the text gave no speech")
        }
        let listener = PlaybackListener()
        if wait { stream.addListener(listener) }
        defer { if wait { stream.removeListener(listener) } }
        let startPosition = stream.position
        let feed = SpeechFeed(samples: samples, format: format, stream: stream, mixer: mixer, synthesizer: synthesizer)
        guard service.start(feed) else {
            feed.abandon()
            throw APIError(.unavailable, "the server is shutting down")
        }
        var answer = Answer(
            stream: stream.name, voice: speech.voice,
            durationMs: Int(format.milliseconds(forFrames: samples.count / format.bytesPerFrame).rounded()), queuedMs: 0)
        if wait {
            try await cancelWhenGracefulShutdown {
                guard try await feed.ended.wait() != .cancelled else { throw CancellationError() }
            }
        }
        answer.queuedMs = Int(stream.queuedMilliseconds.rounded())
        if wait {
            let endPosition = stream.position
            answer.playedMs = try await cancelWhenGracefulShutdown {
                try await PlaybackUpload.waitUntilHeard(
                    listener: listener, stream: stream, start: startPosition, end: endPosition)
            }
        }
        return try JSONResponse.make(answer)
    }

    private func engineOrError() async throws(APIError) -> SpeechSynthesizer.Engine {
        do {
            return try await synthesizer.engine()
        } catch {
            throw APIError(speech: error)
        }
    }
}
