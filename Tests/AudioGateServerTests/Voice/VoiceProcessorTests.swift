import AudioGateCore
import AudioGateTestSupport
import Testing

@testable import AudioGateServer

@Suite("Voice processor (WebRTC audio processing)")
struct VoiceProcessorTests {
    /// Runs far-end speech through a synthetic room (delay, attenuation, a short reflection) and
    /// returns the raw and processed microphone signals.
    static func cancel(rate: Int, delayMilliseconds: Int, seconds: Double) throws -> (raw: [Float], processed: [Float]) {
        let processor = try VoiceProcessor(rate: rate, processing: VoiceProcessing(aec: true, ns: true))
        let far = SpeechLike.utterance(rate: rate, seconds: seconds, seed: 7)
        let delay = rate * delayMilliseconds / 1000
        let reflection = rate / 200
        var mic = [Float](repeating: 0, count: far.count)
        for n in 0..<far.count {
            var value: Float = 0
            if n >= delay { value += 0.5 * far[n - delay] }
            if n >= delay + reflection { value += 0.2 * far[n - delay - reflection] }
            mic[n] = value
        }
        var processed = mic
        let frame = processor.frameSize
        for start in stride(from: 0, to: far.count - frame + 1, by: frame) {
            try far[start..<(start + frame)].withUnsafeBufferPointer { try processor.reverse($0) }
            _ = try processed[start..<(start + frame)].withUnsafeMutableBufferPointer { try processor.process($0) }
        }
        return (mic, processed)
    }

    @Test("echo of far-end speech is cancelled by 30 dB after 2 s and 15 dB within the first second")
    func cancelsEcho() throws {
        let rate = 16000
        let (raw, processed) = try Self.cancel(rate: rate, delayMilliseconds: 60, seconds: 6)
        let early = SpeechLike.erle(raw: raw[(rate / 2)..<rate], processed: processed[(rate / 2)..<rate])
        let late = SpeechLike.erle(raw: raw[(2 * rate)...], processed: processed[(2 * rate)...])
        RealTime.log(String(format: "synthetic ERLE: 0.5-1 s %.1f dB, after 2 s %.1f dB", early, late))
        #expect(early >= 15)
        #expect(late >= 30)
    }

    @Test("near-end speech alone passes within 3 dB")
    func keepsNearEnd() throws {
        let rate = 16000
        let processor = try VoiceProcessor(rate: rate, processing: VoiceProcessing(aec: true, ns: true))
        let near = SpeechLike.utterance(rate: rate, seconds: 3, seed: 11)
        var processed = near
        let silence = [Float](repeating: 0, count: processor.frameSize)
        let frame = processor.frameSize
        for start in stride(from: 0, to: near.count - frame + 1, by: frame) {
            try silence.withUnsafeBufferPointer { try processor.reverse($0) }
            _ = try processed[start..<(start + frame)].withUnsafeMutableBufferPointer { try processor.process($0) }
        }
        let loss = SpeechLike.erle(raw: near[rate...], processed: processed[rate...])
        RealTime.log(String(format: "near-end alone: processed %.1f dB below raw", loss))
        #expect(abs(loss) <= 3)
    }

    @Test("a rate the module does not run at is a typed error")
    func badRate() {
        do throws(VoiceProcessingError) {
            _ = try VoiceProcessor(rate: 44100, processing: VoiceProcessing(aec: true))
            Issue.record("44100 Hz was accepted")
        } catch {
            #expect(error.code == .badSampleRate)
            #expect(error.call == "ag_voice_create")
        }
    }
}
