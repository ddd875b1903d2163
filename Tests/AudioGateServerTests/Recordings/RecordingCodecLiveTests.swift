import AudioGateCore
import AudioGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import AudioGateServer

/// FLAC and Opus recordings on the test card, beside a WAV recording of the same audio.
@Suite("recordings in FLAC and Opus on the test card", .serialized)
struct RecordingCodecLiveTests {
    @Test("speech then a tone: FLAC takes at most 60 % and Opus at 24 kb/s at most 12 % of the WAV; the tone decodes at its pitch and level")
    func sizesAndTone() async throws {
        let speech = try TestRoom.speech(
            "Recordings of a meeting are kept as Opus at twenty four kilobits a second, or losslessly as FLAC. "
                + "Both are a fraction of the size of the wave files.")
        try await RealTime.retryingOnSteal {
            let data = RecordingFixtures.temporaryDirectory("codecs")
            let (server, app) = TestServer.make(TestServer.configuration { $0.dataDirectory = data })
            try await app.test(.live) { client in
                await TestServer.waitForPlayback(server)
                var created: [String: String] = [:]
                for codec in ["wav", "flac", "opus"] {
                    created[codec] = try await RecordingFixtures.start(client, #"{"codec":"\#(codec)","segment_seconds":60,"name":"\#(codec)"}"#)
                }
                let ids = created
                let recordings = server.recordings
                // Little silence before the speech: it would flatter the compressed sizes.
                let started = await Poll.until(seconds: 5) {
                    ids.values.allSatisfy { id in ((try? recordings.info(id))?.frames ?? 0) > 0 }
                }
                try #require(started != nil, "the recordings never got audio")
                let speechBody = PlaybackHTTPTests.wav(speech.samples, rate: speech.rate, channels: 1)
                let spoken = try await client.execute(
                    uri: "/v1/playback?stream=codecs", method: .post, headers: [.contentType: "audio/wav"], body: ByteBuffer(bytes: speechBody))
                #expect(spoken.status == .ok)
                let toneBody = PlaybackHTTPTests.wav(Signal.sine(frequency: 440, rate: 24000, seconds: 3, amplitude: 0.3), rate: 24000, channels: 1)
                let toned = try await client.execute(
                    uri: "/v1/playback?stream=codecs&wait=true", method: .post, headers: [.contentType: "audio/wav"],
                    body: ByteBuffer(bytes: toneBody))
                #expect(toned.status == .ok)
                var stopped: [String: [UInt8]] = [:]
                for codec in ["wav", "flac", "opus"] {
                    let response = try await client.execute(uri: "/v1/recordings/\(ids[codec] ?? "")/stop", method: .post)
                    stopped[codec] = Array(buffer: response.body)
                }
                try Self.check(stopped, data: data)
            }
        }
    }

    /// Sizes, validity, pitch and level of the three stopped recordings (their JSON details).
    static func check(_ stopped: [String: [UInt8]], data: String) throws {
        let details = stopped.mapValues { (try? JSONSerialization.jsonObject(with: Data($0))) as? [String: Any] ?? [:] }
        let wav = try #require(details["wav"])
        let seconds = wav["duration_seconds"] as? Double ?? 0
        let wavBytes = Double(wav.int("bytes") ?? 1)
        var reference: Double?
        for codec in ["wav", "flac", "opus"] {
            let info = try #require(details[codec])
            #expect(info["codec"] as? String == codec)
            #expect(info["state"] as? String == "stopped")
            let segment = try #require(info.objects("segments").first)
            #expect(info.objects("segments").count == 1)
            let path = data + "/recordings/" + (info["id"] as? String ?? "") + "/" + (segment["file"] as? String ?? "")
            let stream = try FFmpegTool.probeStream(path: path)
            #expect(stream["codec_name"] as? String == ["wav": "pcm_s16le", "flac": "flac", "opus": "opus"][codec])
            let decoded = try FFmpegTool.decode(path)
            // The tone is the last 3 s played: measure 1.5 s well inside it.
            let samples = decoded.samples
            let end = samples.count - Int(0.8 * Double(decoded.rate))
            let tone = Array(samples[(end - Int(1.5 * Double(decoded.rate)))..<end])
            let pitch = Goertzel.dominantFrequency(tone, rate: decoded.rate, near: 440)
            let level = 20 * log10(Goertzel.amplitude(tone, frequency: 440, rate: decoded.rate))
            let ratio = Double(info.int("bytes") ?? 0) / wavBytes
            let kbps = Double(info.int("bytes") ?? 0) * 8 / seconds / 1000
            RealTime.log(
                "\(codec): \(info.int("bytes") ?? 0) bytes for \(String(format: "%.1f", seconds)) s (\(String(format: "%.1f", ratio * 100)) % of WAV, \(String(format: "%.1f", kbps)) kb/s), tone \(String(format: "%.2f", pitch)) Hz at \(String(format: "%.2f", level)) dBFS")
            try SignalCheckFailure.require(abs(pitch - 440) < 1, "\(codec): pitch \(pitch) Hz")
            if codec == "wav" {
                reference = level
            } else {
                let difference = level - (reference ?? level)
                try SignalCheckFailure.require(abs(difference) < (codec == "flac" ? 1 : 2), "\(codec): level \(difference) dB from the WAV")
            }
            if codec == "flac" { #expect(ratio <= 0.6, "FLAC is \(ratio * 100) % of the WAV") }
            if codec == "opus" {
                #expect(info["bitrate"] as? Int == 24000)
                #expect(ratio <= 0.12, "Opus is \(ratio * 100) % of the WAV")
            }
        }
        #expect(seconds > 8, "recorded \(seconds) s")
    }
}
