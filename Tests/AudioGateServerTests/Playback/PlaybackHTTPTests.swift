import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// `POST/DELETE /v1/playback` and `/v1/volume`, heard on the test card's monitor.
@Suite("playback over HTTP", .serialized)
struct PlaybackHTTPTests {
    static func wav(_ samples: [Float], rate: Int, channels: Int, format: SampleFormat = .s16le) -> [UInt8] {
        let interleaved = Signal.duplicate(samples, channels: channels)
        let data = SampleConversion.encode(interleaved, format: format)
        return WAVHeader.encode(format: AudioFormat(rate: rate, channels: channels, sampleFormat: format), dataByteCount: data.count) + data
    }

    @Test("a 44.1 kHz stereo WAV plays at the right pitch and length; wait=true answers after it was heard")
    func postWAV() async throws {
        try await PlaybackServer.live { server, client, monitor in
            let body = Self.wav(Signal.sine(frequency: 1000, rate: 44100, seconds: 1, amplitude: 0.5), rate: 44100, channels: 2)
            let response = try await client.execute(
                uri: "/v1/playback?wait=true", method: .post, headers: [.contentType: "audio/wav"], body: ByteBuffer(bytes: body))
            let answeredAt = MonotonicClock.nowMilliseconds()
            #expect(response.status == .ok)
            #expect(response.json["duration_ms"] as? Int == 1000)
            #expect(response.json["stream"] as? String == "default")
            let played = try #require(response.json["played_ms"] as? Int)
            #expect(abs(played - 1000) <= 10)
            try await Task.sleep(for: .milliseconds(100))
            monitor.stop()
            let samples = monitor.samples
            let segment = try #require(PlaybackAnalysis.segments(samples).first)
            let heardMs = PlaybackAnalysis.milliseconds(segment.count)
            try SignalCheckFailure.require(abs(heardMs - 1000) < 30, "heard \(heardMs) ms")
            let pitch = Goertzel.dominantFrequency(Array(samples[segment]), rate: PlaybackMonitor.rate, near: 1000)
            try SignalCheckFailure.require(abs(pitch - 1000) < 1, "pitch \(pitch) Hz")
            let end = monitor.time(ofSample: segment.upperBound)
            try SignalCheckFailure.require(answeredAt > end - 30, "answered \(end - answeredAt) ms before the audio ended")
        }
    }

    @Test("a body over --max-body-mb gets 413 before anything plays; the stream then plays the next upload")
    func bodyOverLimit() async throws {
        let (server, app) = TestServer.make(TestServer.configuration { $0.limits.maxBodyMegabytes = 1 })
        try await app.test(.live) { client in
            await TestServer.waitForPlayback(server)
            let large = try await client.execute(
                uri: "/v1/playback?rate=16000&stream=big", method: .post, headers: [.contentType: "application/octet-stream"],
                body: ByteBuffer(bytes: [UInt8](repeating: 0, count: (1 << 20) + 2)))
            #expect(large.status == .contentTooLarge)
            #expect((large.json["error"] as? [String: Any])?["code"] as? String == "too_large")
            #expect(server.engine.mixer.existingStream("big")?.queued.frames ?? 0 == 0, "nothing of it was queued")
            let small = try await client.execute(
                uri: "/v1/playback?rate=16000&stream=big&wait=true", method: .post,
                headers: [.contentType: "application/octet-stream"], body: ByteBuffer(bytes: [UInt8](repeating: 0, count: 16000)))
            #expect(small.status == .ok, "\(small.json)")
            #expect(small.json["played_ms"] as? Int == 500)
        }
    }

    @Test("raw 24 kHz s16le described by the query plays at the right pitch and length")
    func postRaw() async throws {
        try await PlaybackServer.live { server, client, monitor in
            let body = SampleConversion.encode(Signal.sine(frequency: 600, rate: 24000, seconds: 0.5, amplitude: 0.5), format: .s16le)
            let response = try await client.execute(
                uri: "/v1/playback?rate=24000&channels=1&format=s16le&stream=raw&wait=true", method: .post,
                headers: [.contentType: "application/octet-stream"], body: ByteBuffer(bytes: body))
            #expect(response.status == .ok)
            #expect(response.json["duration_ms"] as? Int == 500)
            #expect(response.json["stream"] as? String == "raw")
            try await Task.sleep(for: .milliseconds(100))
            monitor.stop()
            let samples = monitor.samples
            let segment = try #require(PlaybackAnalysis.segments(samples).first)
            let heardMs = PlaybackAnalysis.milliseconds(segment.count)
            try SignalCheckFailure.require(abs(heardMs - 500) < 30, "heard \(heardMs) ms")
            let pitch = Goertzel.dominantFrequency(Array(samples[segment]), rate: PlaybackMonitor.rate, near: 600)
            try SignalCheckFailure.require(abs(pitch - 600) < 1, "pitch \(pitch) Hz")
        }
    }

    @Test("malformed bodies get clean 400/415 errors and play nothing")
    func malformedBodies() async throws {
        let (server, app) = PlaybackServer.make()
        try await app.test(.live) { client in
            await TestServer.waitForPlayback(server)
            let good = Self.wav(Signal.sine(frequency: 440, rate: 16000, seconds: 0.1), rate: 16000, channels: 1)
            func wav(tag: UInt16? = nil, rate: UInt32? = nil, channels: UInt16? = nil) -> [UInt8] {
                var bytes = good
                if let tag { bytes[20] = UInt8(tag & 0xFF); bytes[21] = UInt8(tag >> 8) }
                if let channels { bytes[22] = UInt8(channels); bytes[23] = 0 }
                if let rate { for i in 0..<4 { bytes[24 + i] = UInt8((rate >> (8 * UInt32(i))) & 0xFF) } }
                return bytes
            }
            let cases: [(String, [UInt8], HTTPFields, HTTPResponse.Status)] = [
                ("truncated header", Array(good[0..<30]), [:], .badRequest),
                ("compressed (MP3 tag)", wav(tag: 0x55), [:], .unsupportedMediaType),
                ("mu-law", wav(tag: 7), [:], .unsupportedMediaType),
                ("4 kHz", wav(rate: 4000), [:], .badRequest),
                ("3 channels", wav(channels: 3), [:], .badRequest),
                ("empty", [], [:], .badRequest),
                ("audio/L16", [0, 0, 0, 0], [.contentType: "audio/L16;rate=24000"], .unsupportedMediaType),
                ("audio/aac", [0, 0, 0, 0], [.contentType: "audio/aac"], .unsupportedMediaType),
            ]
            for (label, body, headers, status) in cases {
                let response = try await client.execute(uri: "/v1/playback", method: .post, headers: headers, body: ByteBuffer(bytes: body))
                #expect(response.status == status, "\(label)")
                #expect(response.headers[.contentType] == "application/json", "\(label)")
                #expect((response.json["error"] as? [String: Any])?["code"] != nil, "\(label)")
            }
            for query in ["rate=1000", "channels=3", "format=s24le", "stream=bad%20name", "wait=maybe"] {
                let response = try await client.execute(uri: "/v1/playback?\(query)", method: .post, body: ByteBuffer(bytes: [0, 0]))
                #expect(response.status == .badRequest, "\(query)")
            }
            #expect(server.engine.mixer.queuedMilliseconds == 0)
            #expect(server.engine.mixer.streamCount == 0)
        }
    }

    @Test("Expect: 100-continue is answered at once: 100 for an accepted upload, the final error for a refused one")
    func expectContinue() async throws {
        let (server, app) = PlaybackServer.make()
        try await app.test(.live) { client in
            await TestServer.waitForPlayback(server)
            let port = try #require(client.port)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("audiogate-expect-\(getpid()).raw").path
            try Data(count: 4800).write(to: URL(fileURLWithPath: file))
            defer { try? FileManager.default.removeItem(atPath: file) }
            // curl would wait the whole --expect100-timeout for an unanswered expectation, past --max-time.
            let upload = ["-T", file, "--expect100-timeout", "30"]
            let accepted = try Curl.request(port: port, path: "/v1/playback", method: "POST", options: upload)
            #expect(accepted.status == 100, "\(accepted.headers)")
            #expect(accepted.body.contains("HTTP/1.1 200"), "\(accepted.body)")
            #expect(accepted.body.contains("\"duration_ms\":100"), "\(accepted.body)")
            let refused = try Curl.request(port: port, path: "/v1/playback?channels=9", method: "POST", options: upload)
            #expect(refused.status == 400, "\(refused.headers)")
            #expect(refused.body.contains("bad_parameter"), "\(refused.body)")
            let foreign = try Curl.request(
                port: port, path: "/v1/playback", method: "POST", headers: ["Origin: https://evil.example"], options: upload)
            #expect(foreign.status == 403, "\(foreign.headers)")
        }
    }

    @Test("DELETE flushes a stream and answers played_ms and flushed_ms")
    func deleteFlushes() async throws {
        try await RealTime.retryingOnSteal {
            let (server, app) = PlaybackServer.make()
            try await app.test(.live) { client in
                await TestServer.waitForPlayback(server)
                let body = SampleConversion.encode(Signal.sine(frequency: 440, rate: 24000, seconds: 3, amplitude: 0.3), format: .s16le)
                let posted = try await client.execute(uri: "/v1/playback?stream=talk", method: .post, body: ByteBuffer(bytes: body))
                #expect(posted.status == .ok)
                try await Task.sleep(for: .milliseconds(500))
                let response = try await client.execute(uri: "/v1/playback?stream=talk", method: .delete)
                #expect(response.status == .ok)
                let played = try #require(response.json["played_ms"] as? Int)
                let flushed = try #require(response.json["flushed_ms"] as? Int)
                try SignalCheckFailure.require(abs(played + flushed - 3000) <= 20, "played \(played) + flushed \(flushed)")
                try SignalCheckFailure.require(played > 300 && played < 800, "played \(played)")
                #expect(await Poll.until(seconds: 1) { server.engine.mixer.queuedMilliseconds == 0 } != nil)
                let again = try await client.execute(uri: "/v1/playback", method: .delete)
                #expect(again.json["flushed_ms"] as? Int == 0)
                // Every latency in the status has one shape. The clear is counted once the card went silent.
                var status: [String: Any] = [:]
                for _ in 0..<50 {
                    status = try await client.execute(uri: "/v1/status", method: .get).json
                    let cleared = (status["playback"] as? [String: Any])?["clear_to_silence"] as? [String: Any]
                    if cleared?["count"] as? Int == 1 { break }
                    try await Task.sleep(for: .milliseconds(20))
                }
                let playback = status["playback"] as? [String: Any] ?? [:]
                let capture = status["capture"] as? [String: Any] ?? [:]
                for (name, summary) in [
                    ("latency", playback["latency"]), ("clear_to_silence", playback["clear_to_silence"]),
                    ("send_delay", capture["send_delay"]),
                ] {
                    let summary = summary as? [String: Any] ?? [:]
                    #expect(Set(summary.keys) == ["count", "p50_ms", "p99_ms", "max_ms"], "\(name): \(summary)")
                }
                let latency = playback["latency"] as? [String: Any] ?? [:]
                let cleared = playback["clear_to_silence"] as? [String: Any] ?? [:]
                #expect(latency["count"] as? Int == 1)
                #expect(cleared["count"] as? Int == 1)
                let p50 = latency["p50_ms"] as? Double ?? 0
                #expect(p50 > 0 && p50 <= (latency["max_ms"] as? Double ?? 0))
            }
        }
    }

    @Test("volume 0.5 lowers the level by 6 dB without clicks; mute gives silence")
    func volume() async throws {
        try await RealTime.retryingOnSteal {
            let (server, app) = PlaybackServer.make()
            try await app.test(.live) { client in
                await TestServer.waitForPlayback(server)
                let initial = try await client.execute(uri: "/v1/volume", method: .get)
                #expect(initial.json["playback"] as? Double == 1)
                #expect(initial.json["muted"] as? Bool == false)
                let bad = try await client.execute(uri: "/v1/volume", method: .put, body: ByteBuffer(string: #"{"playback":1.5}"#))
                #expect(bad.status == .badRequest)
                let monitor = try PlaybackMonitor()
                defer { monitor.stop() }
                await monitor.waitUntilRecording()
                let body = SampleConversion.encode(Signal.sine(frequency: 440, rate: 24000, seconds: 3.2, amplitude: 0.5), format: .s16le)
                _ = try await client.execute(uri: "/v1/playback", method: .post, body: ByteBuffer(bytes: body))
                try await Task.sleep(for: .milliseconds(1000))
                let halfAt = MonotonicClock.nowMilliseconds()
                let half = try await client.execute(uri: "/v1/volume", method: .put, body: ByteBuffer(string: #"{"playback":0.5}"#))
                #expect(half.json["playback"] as? Double == 0.5)
                try await Task.sleep(for: .milliseconds(1000))
                let muteAt = MonotonicClock.nowMilliseconds()
                _ = try await client.execute(uri: "/v1/volume", method: .put, body: ByteBuffer(string: #"{"muted":true}"#))
                try await Task.sleep(for: .milliseconds(700))
                monitor.stop()
                _ = try await client.execute(uri: "/v1/volume", method: .put, body: ByteBuffer(string: #"{"playback":1,"muted":false}"#))
                let samples = monitor.samples
                func level(_ from: Double, _ to: Double) -> Double {
                    let range = max(0, monitor.sample(atTime: from))..<min(samples.count, monitor.sample(atTime: to))
                    return Signal.rmsDBFS(Array(samples[range]))
                }
                let full = level(halfAt - 600, halfAt - 100)
                let halved = level(halfAt + 200, halfAt + 700)
                let muted = level(muteAt + 200, muteAt + 600)
                try SignalCheckFailure.require(abs(full - halved - 6.02) < 0.5, "full \(full) dB, half \(halved) dB")
                try SignalCheckFailure.require(muted < -80, "muted level \(muted) dB")
                // The ramp: no sample-to-sample jump larger than the tone itself makes.
                let around = max(0, monitor.sample(atTime: halfAt - 100))..<min(samples.count, monitor.sample(atTime: muteAt + 200))
                let largestStep = Signal.largestStep(samples[around])
                try SignalCheckFailure.require(largestStep < 0.05, "a step of \(largestStep)")
            }
        }
    }

    @Test("the device lost mid-playback and restored: the queued audio plays afterwards")
    func deviceLoss() async throws {
        let (server, app) = PlaybackServer.make()
        try await app.test(.live) { client in
            await TestServer.waitForPlayback(server)
            let body = SampleConversion.encode(Signal.sine(frequency: 440, rate: 24000, seconds: 4, amplitude: 0.4), format: .s16le)
            _ = try await client.execute(uri: "/v1/playback?stream=survivor", method: .post, body: ByteBuffer(bytes: body))
            try await Task.sleep(for: .milliseconds(800))
            TestCard.kill()
            #expect(await Poll.until(seconds: 5) { server.engine.playback.monitor.snapshot.state != .running } != nil)
            let queuedDuringLoss = server.engine.mixer.queuedMilliseconds
            TestCard.start()
            let monitor = try PlaybackMonitor()
            defer { monitor.stop() }
            #expect(await Poll.until(seconds: 8) { server.engine.playback.monitor.snapshot.state == .running } != nil)
            await monitor.waitUntilRecording()
            #expect(await Poll.until(seconds: 8) { server.engine.mixer.queuedMilliseconds == 0 } != nil)
            try await Task.sleep(for: .milliseconds(300))
            monitor.stop()
            let segment = PlaybackAnalysis.segments(monitor.samples).max { $0.count < $1.count }
            let heardMs = segment.map { PlaybackAnalysis.milliseconds($0.count) } ?? 0
            #expect(queuedDuringLoss > 1500, "queued \(queuedDuringLoss) ms when the device went away")
            #expect(heardMs > 1000, "heard \(heardMs) ms after the device came back")
        }
    }
}
