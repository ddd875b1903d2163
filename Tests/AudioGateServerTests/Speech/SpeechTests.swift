import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// `POST /v1/say` and `GET /v1/voices` with espeak-ng, heard on the test card's monitor.
@Suite("speech", .serialized)
struct SpeechTests {
    @Test("spoken text is heard for about its duration; wait=true answers after it was heard")
    func sayIsHeard() async throws {
        try await PlaybackServer.live { server, client, monitor in
            let response = try await client.execute(
                uri: "/v1/say?wait=true", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"text":"The quick brown fox jumps over the lazy dog.","voice":"en-us","stream":"voice"}"#))
            #expect(response.status == .ok, "\(response.json)")
            #expect(response.json["stream"] as? String == "voice")
            let duration = try #require(response.json["duration_ms"] as? Int)
            let played = try #require(response.json["played_ms"] as? Int)
            #expect(duration > 1000 && duration < 6000, "duration_ms \(duration)")
            #expect(abs(played - duration) <= 10, "played \(played) of \(duration)")
            try await Task.sleep(for: .milliseconds(100))
            monitor.stop()
            let samples = monitor.samples
            let segments = PlaybackAnalysis.segments(samples, thresholdDBFS: -40, minimumMs: 20)
            let first = try #require(segments.first, "nothing heard")
            let last = try #require(segments.last)
            let spanMs = PlaybackAnalysis.milliseconds(last.upperBound - first.lowerBound)
            // espeak-ng's output starts and ends with a little silence of its own.
            try SignalCheckFailure.require(
                spanMs > Double(duration) - 400 && spanMs <= Double(duration) + 30, "heard \(spanMs) ms of \(duration) ms")
            let loud = segments.reduce(0) { $0 + $1.count }
            try SignalCheckFailure.require(
                PlaybackAnalysis.milliseconds(loud) > Double(duration) / 2, "speech for only \(PlaybackAnalysis.milliseconds(loud)) ms")
        }
    }

    @Test("empty, oversized and malformed requests are refused with JSON; voices are listed")
    func refusals() async throws {
        let (server, app) = PlaybackServer.make()
        try await app.test(.live) { client in
            await TestServer.waitForPlayback(server)
            let long = String(repeating: "word ", count: 900)
            let cases: [(String, String, HTTPResponse.Status)] = [
                ("empty", #"{"text":""}"#, .badRequest),
                ("blank", #"{"text":"   "}"#, .badRequest),
                ("missing", #"{"voice":"en-us"}"#, .badRequest),
                ("not JSON", "hello", .badRequest),
                ("oversized", #"{"text":"\#(long)"}"#, .contentTooLarge),
                ("unknown voice", #"{"text":"hi","voice":"xx-nowhere"}"#, .badRequest),
                ("rate", #"{"text":"hi","rate":9}"#, .badRequest),
                ("stream", #"{"text":"hi","stream":"bad name"}"#, .badRequest),
            ]
            for (label, body, status) in cases {
                let response = try await client.execute(uri: "/v1/say", method: .post, body: ByteBuffer(string: body))
                #expect(response.status == status, "\(label): \(response.json)")
                #expect(response.headers[.contentType] == "application/json", "\(label)")
                #expect((response.json["error"] as? [String: Any])?["code"] != nil, "\(label)")
            }
            #expect(server.engine.mixer.queuedMilliseconds == 0)
            let voices = try await client.execute(uri: "/v1/voices", method: .get)
            #expect(voices.status == .ok)
            let list = try #require(voices.json["voices"] as? [[String: Any]])
            let english = list.first { $0["name"] as? String == "en-us" }
            #expect(english != nil, "no en-us among \(list.count) voices")
            #expect((english?["languages"] as? [String])?.contains("en-us") == true)
            #expect(["male", "female", "unknown"].contains(english?["gender"] as? String ?? ""))
        }
    }
}
