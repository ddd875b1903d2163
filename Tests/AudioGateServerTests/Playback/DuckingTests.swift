import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// Music (`role=music`) is lowered while a voice stream plays and comes back after it, without a
/// click, heard on the test card's monitor.
@Suite("ducking", .serialized, .timeLimit(.minutes(2)))
struct DuckingTests {
    static let rate = 48000
    static let music = 440.0
    static let voice = 5000.0

    /// A tone with 5 ms raised-cosine edges, as s16le bytes.
    static func tone(_ frequency: Double, seconds: Double, amplitude: Double) -> [UInt8] {
        var samples = Signal.sine(frequency: frequency, rate: rate, seconds: seconds, amplitude: amplitude)
        let edge = rate / 200
        for index in 0..<edge {
            let gain = Float(0.5 - 0.5 * cos(Double.pi * Double(index) / Double(edge)))
            samples[index] *= gain
            samples[samples.count - 1 - index] *= gain
        }
        return SampleConversion.encode(samples, format: .s16le)
    }

    /// The music tone's level in dBFS (least-squares fit, so the voice tone does not count) over
    /// 20 ms from sample `start`.
    static func musicLevel(_ samples: [Float], at start: Int) -> Double {
        let fit = ToneFit.fit(samples, range: start..<min(samples.count, start + rate / 50), frequency: music, rate: rate)
        return 20 * log10(max(fit.amplitude, 1e-9))
    }

    @Test("a voice over music lowers the music by 15 dB within 150 ms and restores it after, without a click")
    func ducksMusic() async throws {
        try await PlaybackServer.live { server, client, monitor in
            let musicBody = Self.tone(Self.music, seconds: 4.5, amplitude: 0.3)
            let posted = try await client.execute(
                uri: "/v1/playback?rate=48000&channels=1&stream=music&role=music", method: .post,
                body: ByteBuffer(bytes: musicBody))
            #expect(posted.status == .ok)
            try await Task.sleep(for: .milliseconds(1000))
            let voice = try await client.execute(
                uri: "/v1/playback?rate=48000&channels=1&stream=agent", method: .post,
                body: ByteBuffer(bytes: Self.tone(Self.voice, seconds: 1, amplitude: 0.2)))
            #expect(voice.status == .ok)
            try await Task.sleep(for: .milliseconds(400))
            let status = try await client.execute(uri: "/v1/status", method: .get).json
            let playback = try #require(status["playback"] as? [String: Any])
            let ducking = try #require(playback["ducking"] as? [String: Any])
            #expect(ducking["active"] as? Bool == true)
            #expect(ducking["duck_db"] as? Double == 15)
            let roles = (playback["stream_list"] as? [[String: Any]] ?? []).reduce(into: [String: String]()) {
                $0[$1["name"] as? String ?? ""] = $1["role"] as? String
            }
            #expect(roles["music"] == "music" && roles["agent"] == "voice", "\(roles)")
            try await Task.sleep(for: .milliseconds(3200))
            monitor.stop()
            let samples = monitor.samples

            // The voice's onset and end: 5 ms windows where the 5 kHz tone stands out.
            let window = Self.rate / 200
            var voiceWindows: [Int] = []
            var index = 0
            while index + window <= samples.count {
                if Goertzel.amplitude(Array(samples[index..<(index + window)]), frequency: Self.voice, rate: Self.rate) > 0.05 {
                    voiceWindows.append(index)
                }
                index += window
            }
            let voiceStart = try #require(voiceWindows.first, "the voice was not heard")
            let voiceEnd = (voiceWindows.last ?? voiceStart) + window
            let voiceMs = PlaybackAnalysis.milliseconds(voiceEnd - voiceStart)
            let before = Self.musicLevel(samples, at: voiceStart - Self.rate / 2)
            let ms = { (milliseconds: Double) in Int(milliseconds * Double(Self.rate) / 1000) }
            let at150 = Self.musicLevel(samples, at: voiceStart + ms(150))
            let duckedLevels = stride(from: voiceStart + ms(150), to: voiceEnd - ms(20), by: ms(20)).map {
                Self.musicLevel(samples, at: $0)
            }
            // The hold (250 ms) and the 500 ms ramp, then a margin.
            let after = Self.musicLevel(samples, at: voiceEnd + ms(850))
            let report = PhaseContinuity.check(samples, frequency: Self.music, rate: Self.rate, gapDB: 20)
            // A click in the gain is a step in the music's level: the ramps move it 0.75 dB (down) and
            // 0.15 dB (up) per 5 ms; a hard 15 dB switch would show a step of several dB.
            let levels = stride(from: voiceStart - ms(300), to: voiceEnd + ms(1000), by: ms(5)).map {
                20 * log10(max(ToneFit.fit(samples, range: $0..<($0 + ms(10)), frequency: Self.music, rate: Self.rate).amplitude, 1e-9))
            }
            let largestLevelStep = zip(levels, levels.dropFirst()).map { abs($1 - $0) }.max() ?? 0
            RealTime.log(
                String(
                    format: "ducking: music %.1f dBFS before, %.1f at 150 ms (%.2f dB), %.1f to %.1f under the voice (%.0f ms), %.1f after; largest level step per 5 ms %.2f dB; phase jump %.3f rad",
                    before, at150, at150 - before, duckedLevels.min() ?? 0, duckedLevels.max() ?? 0, voiceMs, after,
                    largestLevelStep, report.maxPhaseJump))
            #expect(abs(voiceMs - 1000) < 15)
            try SignalCheckFailure.require(abs(at150 - before + 15) <= 1, "music at 150 ms: \(at150 - before) dB")
            for level in duckedLevels {
                try SignalCheckFailure.require(abs(level - before + 15) <= 1, "music under the voice: \(level - before) dB")
            }
            try SignalCheckFailure.require(abs(after - before) <= 0.5, "music after: \(after - before) dB")
            try SignalCheckFailure.require(report.gaps.isEmpty, "gaps in the music at \(report.gaps)")
            try SignalCheckFailure.require(
                largestLevelStep < 1.5, "the music's level stepped \(largestLevelStep) dB in 5 ms: a click")
            try SignalCheckFailure.require(
                report.isContinuous(maxJump: 0.2), "music phase jump \(report.maxPhaseJump) rad at \(report.maxPhaseJumpSample ?? -1)")
        }
    }

    @Test("a bad role is a JSON 400 naming the parameter")
    func badRole() async throws {
        let (_, app) = PlaybackServer.make()
        try await app.test(.router) { client in
            for (uri, method) in [("/v1/playback?role=loud", HTTPRequest.Method.post), ("/v1/playback?role=", .get)] {
                let response = try await client.execute(uri: uri, method: method, body: ByteBuffer(bytes: [0, 0]))
                #expect(response.status == .badRequest, "\(uri)")
                let error = response.json["error"] as? [String: Any]
                #expect(error?["code"] as? String == "bad_parameter", "\(uri)")
                #expect((error?["message"] as? String)?.contains("'role'") == true, "\(uri): \(error ?? [:])")
            }
            let info = try await client.execute(uri: "/v1/info", method: .get).json
            #expect(info["duck_db"] as? Double == 15)
        }
    }
}
