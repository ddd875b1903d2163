import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import WSClient

/// Compressed uploads that stream in at real time, and hostile ones.
@Suite("compressed uploads", .serialized)
struct CompressedUploadTests {
    @Test("a 4 s MP3 uploaded in chunks at real time is heard within 300 ms of its first bytes")
    func realTimeMP3() async throws {
        let file = try CodecFixtures.make(CodecFixtures.mp3Stereo, frequency: 440, seconds: 4)
        try await RealTime.retryingOnSteal {
            let (server, app) = PlaybackServer.make()
            try await app.test(.live) { client in
                await TestServer.waitForPlayback(server)
                let port = try #require(client.port)
                let monitor = try PlaybackMonitor()
                defer { monitor.stop() }
                await monitor.waitUntilRecording()
                let upload = try Curl.Upload(port: port, path: "/v1/playback?stream=tts", contentType: "audio/mpeg", maxTime: 20)
                // 100 ms pieces at the file's own pace, as a TTS service streams them; the first 200 ms
                // arrive together (a service is a little ahead of real time, or the sender's
                // scheduling jitter alone would leave holes that are not the server's).
                let pieces = 40
                let lead = 2
                let pieceBytes = (file.count + pieces - 1) / pieces
                let firstBytesMs = MonotonicClock.nowMilliseconds()
                for piece in 0..<pieces {
                    let start = piece * pieceBytes
                    guard start < file.count else { break }
                    upload.write(file[start..<min(file.count, start + pieceBytes)])
                    if piece < lead { continue }
                    let due = firstBytesMs + Double(piece + 1 - lead) * 100
                    let wait = due - MonotonicClock.nowMilliseconds()
                    if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait))) }
                }
                let (body, answer) = try await upload.finish()
                let duration = try #require(answer["duration_ms"] as? Int, "answer \(String(decoding: body, as: UTF8.self))")
                #expect(abs(duration - 4000) <= 60)
                await Poll.until(seconds: 3) { (server.engine.mixer.existingStream("tts")?.queuedMilliseconds ?? 0) == 0 }
                try await Task.sleep(for: .milliseconds(200))
                monitor.stop()
                let segments = PlaybackAnalysis.segments(monitor.samples)
                let first = try #require(segments.first)
                let firstSoundMs = monitor.time(ofSample: first.lowerBound) - firstBytesMs
                RealTime.log("first sound \(String(format: "%.0f", firstSoundMs)) ms after the first bytes")
                try SignalCheckFailure.require(firstSoundMs < 300, "first sound \(firstSoundMs) ms after the first bytes")
                try SignalCheckFailure.require(segments.count == 1, "\(segments.count) segments: a gap while streaming")
                let heardMs = PlaybackAnalysis.milliseconds(first.count)
                try SignalCheckFailure.require(abs(heardMs - 4000) < 60, "heard \(heardMs) ms")
            }
        }
    }

    @Test("WebSocket ?format=mp3: binary and base64 pieces play; a mark comes once heard; garbage gets an error event")
    func webSocketMP3() async throws {
        let file = try CodecFixtures.make(CodecFixtures.mp3Mono, frequency: 660, seconds: 1)
        try await PlaybackServer.live { server, client, monitor in
            let log = try await PlaybackClient.session(client, query: "format=mp3&stream=ws") { outbound, log in
                let half = file.count / 2
                for start in stride(from: 0, to: half, by: 1000) {
                    try await outbound.write(.binary(ByteBuffer(bytes: file[start..<min(half, start + 1000)])))
                }
                for start in stride(from: half, to: file.count, by: 1000) {
                    let piece = Data(file[start..<min(file.count, start + 1000)]).base64EncodedString()
                    try await outbound.write(.text(#"{"type":"audio","data":"\#(piece)"}"#))
                }
                try await outbound.write(.text(#"{"type":"mark","name":"end"}"#))
                await log.wait(for: "mark")
                try await outbound.write(.binary(ByteBuffer(bytes: [UInt8](repeating: 0x42, count: 3000))))
                try await outbound.write(.text(#"{"type":"mark","name":"after-garbage"}"#))
                await log.wait(for: "mark", count: 2)
            }
            try await Task.sleep(for: .milliseconds(100))
            monitor.stop()
            let segment = try PlaybackAnalysis.singleTone(monitor.samples, frequency: 660, expectedMs: 1000, toleranceMs: 60)
            let mark = try #require(log.of("mark").first)
            let end = monitor.time(ofSample: segment.upperBound)
            try SignalCheckFailure.require(abs(mark.ms - end) < 40, "mark \(mark.ms - end) ms after the audio ended")
            #expect(log.of("error").count == 1, "\(log.all.map(\.type))")
        }
    }

    @Test("corrupt, truncated and mislabelled uploads get JSON errors while another stream plays on")
    func hostileInput() async throws {
        let mp3 = try CodecFixtures.make(CodecFixtures.mp3Mono, frequency: 440, seconds: 0.5)
        let opus = try CodecFixtures.make(CodecFixtures.opus, frequency: 440, seconds: 0.5)
        let flac = try CodecFixtures.make(CodecFixtures.flac16, frequency: 440, seconds: 0.5)
        var generator = SeededGenerator(seed: 14)
        let noise = generator.bytes(8000)
        try await PlaybackServer.live { server, client, monitor in
            let music = SampleConversion.encode(Signal.sine(frequency: 1000, rate: 24000, seconds: 3, amplitude: 0.3), format: .s16le)
            let musicAnswer = try await client.execute(
                uri: "/v1/playback?stream=music&rate=24000", method: .post, body: ByteBuffer(bytes: music))
            #expect(musicAnswer.status == .ok)
            let cases: [(String, [UInt8], String, HTTPResponse.Status)] = [
                ("noise as MP3", noise, "audio/mpeg", .badRequest),
                ("noise as Ogg", noise, "audio/ogg", .badRequest),
                ("noise as FLAC", noise, "audio/flac", .badRequest),
                ("noise as WebM", noise, "audio/webm", .badRequest),
                ("MP3 labelled Ogg", mp3, "audio/ogg", .badRequest),
                ("Opus labelled FLAC", opus, "audio/flac", .badRequest),
                ("FLAC header cut short", Array(flac.prefix(200)), "audio/flac", .badRequest),
                ("Ogg cut inside its headers", Array(opus.prefix(60)), "audio/ogg", .badRequest),
            ]
            for (label, body, type, status) in cases {
                let response = try await client.execute(
                    uri: "/v1/playback?stream=bad", method: .post, headers: [.contentType: type], body: ByteBuffer(bytes: body))
                #expect(response.status == status, "\(label): \(response.json)")
                #expect(response.headers[.contentType] == "application/json", "\(label)")
                #expect((response.json["error"] as? [String: Any])?["code"] != nil, "\(label)")
            }
            // Truncated mid-stream: what was decoded plays and is reported.
            let truncated = try await client.execute(
                uri: "/v1/playback?stream=bad", method: .post, headers: [.contentType: "audio/mpeg"],
                body: ByteBuffer(bytes: Array(mp3.prefix(mp3.count / 2))))
            #expect(truncated.status == .ok)
            let truncatedMs = try #require(truncated.json["duration_ms"] as? Int)
            #expect(truncatedMs > 100 && truncatedMs < 400, "\(truncated.json)")
            await Poll.until(seconds: 5) { (server.engine.mixer.existingStream("music")?.queuedMilliseconds ?? 0) == 0 }
            try await Task.sleep(for: .milliseconds(100))
            monitor.stop()
            let report = PhaseContinuity.check(monitor.samples, frequency: 1000, rate: PlaybackMonitor.rate)
            try SignalCheckFailure.require(report.gaps.isEmpty, "the other stream had gaps: \(report.gaps)")
        }
    }
}
