import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import HummingbirdWSTesting
import NIOCore
import Testing

/// `format=mulaw|alaw` on playback (POST raw, G.711 WAV files, WebSocket), heard on the test card's monitor.
@Suite("playback of G.711", .serialized)
struct PlaybackG711Tests {
    /// The tone heard on the monitor: its length, pitch and level.
    static func heard(_ monitor: PlaybackMonitor, near frequency: Double) throws -> (ms: Double, pitch: Double, levelDB: Double) {
        let samples = monitor.samples
        let segment = try #require(PlaybackAnalysis.segments(samples).first)
        let tone = Array(samples[segment])
        let pitch = Goertzel.dominantFrequency(tone, rate: PlaybackMonitor.rate, near: frequency)
        let level = 20 * log10(Goertzel.amplitude(tone, frequency: frequency, rate: PlaybackMonitor.rate))
        return (PlaybackAnalysis.milliseconds(segment.count), pitch, level)
    }

    @Test("raw mu-law posted with format=mulaw alone (8 kHz implied) plays at its pitch, length and level")
    func postRawMuLaw() async throws {
        try await PlaybackServer.live { _, client, monitor in
            let body = SampleConversion.encode(Signal.sine(frequency: 600, rate: 8000, seconds: 0.5, amplitude: 0.5), format: .mulaw)
            #expect(body.count == 4000)
            let response = try await client.execute(
                uri: "/v1/playback?format=mulaw&stream=phone&wait=true", method: .post,
                headers: [.contentType: "application/octet-stream"], body: ByteBuffer(bytes: body))
            #expect(response.status == .ok)
            #expect(response.json["duration_ms"] as? Int == 500)
            try await Task.sleep(for: .milliseconds(100))
            monitor.stop()
            let tone = try Self.heard(monitor, near: 600)
            RealTime.log("mulaw playback: \(tone.ms) ms at \(tone.pitch) Hz, \(tone.levelDB) dBFS")
            try SignalCheckFailure.require(abs(tone.ms - 500) < 30, "heard \(tone.ms) ms")
            try SignalCheckFailure.require(abs(tone.pitch - 600) < 1, "pitch \(tone.pitch) Hz")
            try SignalCheckFailure.require(abs(tone.levelDB - 20 * log10(0.5)) < 1, "level \(tone.levelDB) dBFS")
        }
    }

    @Test("a body labelled audio/basic (headerless mu-law, RFC 2046) plays with no query; audio/PCMA contradicting the query is a 400")
    func contentTypes() async throws {
        try await PlaybackServer.live { _, client, monitor in
            let body = SampleConversion.encode(Signal.sine(frequency: 800, rate: 8000, seconds: 0.4, amplitude: 0.5), format: .mulaw)
            let response = try await client.execute(
                uri: "/v1/playback?wait=true", method: .post, headers: [.contentType: "audio/basic"], body: ByteBuffer(bytes: body))
            #expect(response.status == .ok)
            #expect(response.json["duration_ms"] as? Int == 400)
            let contradicting = try await client.execute(
                uri: "/v1/playback?format=s16le", method: .post, headers: [.contentType: "audio/PCMA"], body: ByteBuffer(bytes: body))
            #expect(contradicting.status == .badRequest)
            #expect(((contradicting.json["error"] as? [String: Any])?["message"] as? String)?.contains("'format'") == true)
            try await Task.sleep(for: .milliseconds(100))
            monitor.stop()
            let tone = try Self.heard(monitor, near: 800)
            try SignalCheckFailure.require(abs(tone.ms - 400) < 30, "heard \(tone.ms) ms")
            try SignalCheckFailure.require(abs(tone.pitch - 800) < 1, "pitch \(tone.pitch) Hz")
            try SignalCheckFailure.require(abs(tone.levelDB - 20 * log10(0.5)) < 1, "level \(tone.levelDB) dBFS")
        }
    }

    @Test("an A-law WAV file (format tag 6) plays at its pitch and length")
    func postALawWAV() async throws {
        try await PlaybackServer.live { _, client, monitor in
            let body = PlaybackHTTPTests.wav(Signal.sine(frequency: 1000, rate: 8000, seconds: 0.6, amplitude: 0.5), rate: 8000, channels: 1, format: .alaw)
            #expect(body[20] == 6)
            let response = try await client.execute(
                uri: "/v1/playback?wait=true", method: .post, headers: [.contentType: "audio/wav"], body: ByteBuffer(bytes: body))
            #expect(response.status == .ok)
            #expect(response.json["duration_ms"] as? Int == 600)
            try await Task.sleep(for: .milliseconds(100))
            monitor.stop()
            let tone = try Self.heard(monitor, near: 1000)
            try SignalCheckFailure.require(abs(tone.ms - 600) < 30, "heard \(tone.ms) ms")
            try SignalCheckFailure.require(abs(tone.pitch - 1000) < 1, "pitch \(tone.pitch) Hz")
        }
    }

    @Test("A-law over the WebSocket in 20 ms frames plays as one continuous tone at its pitch and level")
    func webSocketALaw() async throws {
        try await PlaybackServer.live { _, client, monitor in
            let tone = Signal.sine(frequency: 440, rate: 8000, seconds: 2, amplitude: 0.5)
            let log = try await PlaybackClient.session(client, query: "format=alaw") { outbound, log in
                try await PlaybackClient.send(tone, rate: 8000, format: .alaw, jitterMs: 10, to: outbound)
                try await outbound.write(.text(#"{"type":"mark","name":"end"}"#))
                await log.wait(for: "mark")
            }
            #expect(log.of("error").isEmpty)
            try await Task.sleep(for: .milliseconds(200))
            monitor.stop()
            let samples = monitor.samples
            let report = PhaseContinuity.check(samples, frequency: 440, rate: PlaybackMonitor.rate)
            let seconds = report.toneSeconds(rate: PlaybackMonitor.rate)
            try SignalCheckFailure.require(abs(seconds - 2) < 0.03, "tone lasted \(seconds) s, expected 2 s")
            try SignalCheckFailure.require(report.gaps.isEmpty, "gaps at \(report.gaps)")
            try SignalCheckFailure.require(
                report.isContinuous(maxJump: 0.2), "phase jump \(report.maxPhaseJump) rad at \(report.maxPhaseJumpSample ?? -1)")
            let first = try #require(report.firstToneSample)
            let last = try #require(report.lastToneSample)
            let pitch = Goertzel.dominantFrequency(Array(samples[first...last]), rate: PlaybackMonitor.rate, near: 440)
            try SignalCheckFailure.require(abs(pitch - 440) < 1, "pitch \(pitch) Hz")
            let level = 20 * log10(report.medianAmplitude)
            try SignalCheckFailure.require(abs(level - 20 * log10(0.5)) < 1, "level \(level) dB")
        }
    }

    @Test("G.711 at another rate or in stereo is a 400 naming the parameter, on POST and the WebSocket", arguments: [
        ("format=mulaw&rate=16000", "rate"), ("format=alaw&rate=24000", "rate"), ("format=alaw&channels=2", "channels"),
    ])
    func badCombinations(query: String, parameter: String) async throws {
        let (server, app) = PlaybackServer.make()
        try await app.test(.live) { client in
            await TestServer.waitForPlayback(server)
            let port = try #require(client.port)
            let posted = try await client.execute(uri: "/v1/playback?\(query)", method: .post, body: ByteBuffer(bytes: [0xFF, 0xFF]))
            #expect(posted.status == .badRequest)
            let message = (posted.json["error"] as? [String: Any])?["message"] as? String
            #expect(message?.contains("'\(parameter)'") == true, "\(message ?? "-")")
            let upgrade = try Curl.request(port: port, path: "/v1/playback?\(query)", headers: Curl.upgrade)
            #expect(upgrade.status == 400, "\(query)")
            #expect(upgrade.body.contains("'\(parameter)'"), "\(upgrade.body)")
            #expect(server.engine.mixer.streamCount == 0)
        }
    }
}
