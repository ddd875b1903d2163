import AudioGateCore
import Foundation
import Hummingbird

/// `POST /v1/say`: speech queued on a playback stream while it is being synthesized.
struct SpeechPlayback {
    let mixer: PlaybackMixer
    let synthesizer: SpeechSynthesizer

    struct Answer: Encodable {
        var stream: String
        var voice: String
        var durationMs: Int
        var queuedMs: Int
        var playedMs: Int?
    }

    func run(_ speech: SpeechRequest, wait: Bool) async throws -> Response {
        let format = try synthesizer.format()
        guard try synthesizer.hasVoice(speech.voice) else {
            throw APIError(speech: SpeechError(.unknownVoice, "no voice '\(speech.voice)'"))
        }
        guard synthesizer.reserve() else {
            throw APIError(.tooManyRequests, "\(SpeechSynthesizer.maximumPending) texts are being spoken; try again shortly")
        }
        defer { synthesizer.release() }
        let stream = try mixer.acquire(speech.stream)
        defer { mixer.release(stream) }
        let listener = PlaybackListener()
        if wait { stream.addListener(listener) }
        defer { if wait { stream.removeListener(listener) } }

        let startPosition = stream.position
        let output = SpeechOutput()
        synthesizer.synthesize(text: speech.text, voice: speech.voice, wordsPerMinute: speech.wordsPerMinute, into: output)
        let mixFormat = mixer.mixFormatProvider
        var frames = 0
        var probed = false
        let start = MonotonicClock.nowNanoseconds()
        do {
            while true {
                let (bytes, finished, error) = output.take()
                if !bytes.isEmpty {
                    if !probed {
                        probed = true
                        stream.addLatencyProbe(position: stream.position, startNanoseconds: start)
                    }
                    frames += try await stream.enqueue(bytes, format: format, mixFormat: mixFormat)
                }
                if finished {
                    if let error, frames == 0 { throw APIError(speech: error) }
                    break
                }
                if bytes.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            }
        } catch {
            output.cancel()
            throw error
        }
        guard frames > 0 else { throw APIError(.badBody, "the text gave no speech") }
        stream.finishInput()
        let endPosition = stream.position
        var answer = Answer(
            stream: stream.name, voice: speech.voice, durationMs: Int(format.milliseconds(forFrames: frames).rounded()),
            queuedMs: Int(stream.queuedMilliseconds.rounded()))
        if wait {
            answer.playedMs = await PlaybackUpload.waitUntilHeard(
                listener: listener, stream: stream, start: startPosition, end: endPosition)
        }
        return try JSONResponse.make(answer)
    }
}
