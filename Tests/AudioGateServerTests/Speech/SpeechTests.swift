import AudioGateCore
@testable import AudioGateServer
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
    @Test("exactly maximumPending texts are taken at once; the next is refused until one is given back")
    func pendingBound() {
        let synthesizer = SpeechSynthesizer.shared
        var taken = 0
        while taken <= SpeechSynthesizer.maximumPending, synthesizer.reserve() { taken += 1 }
        #expect(taken == SpeechSynthesizer.maximumPending)
        synthesizer.release()
        #expect(synthesizer.reserve(), "a slot given back is taken again")
        for _ in 0..<taken { synthesizer.release() }
    }

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

    @Test("the worst text (digits at rate 0.5) stops at --max-say-seconds and says truncated; a short one does not")
    func truncatedAtBound() async throws {
        let (server, app) = TestServer.make(TestServer.configuration { $0.limits.maxSaySeconds = 5 })
        try await app.test(.live) { client in
            await TestServer.waitForPlayback(server)
            let digits = String(repeating: "1234567890 ", count: 363)
            let body = try JSONSerialization.data(withJSONObject: ["text": digits, "rate": 0.5])
            let long = try await client.execute(
                uri: "/v1/say?stream=digits", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(data: body))
            #expect(long.status == .ok, "\(long.json)")
            #expect(long.json["truncated"] as? Bool == true)
            let duration = try #require(long.json["duration_ms"] as? Int)
            #expect(duration > 4900 && duration <= 5000, "duration_ms \(duration)")
            _ = try await client.execute(uri: "/v1/playback?stream=digits", method: .delete)
            let short = try await client.execute(
                uri: "/v1/say?stream=digits", method: .post, body: ByteBuffer(string: #"{"text":"Hello."}"#))
            #expect(short.status == .ok, "\(short.json)")
            #expect(short.json["truncated"] as? Bool == false)
        }
    }

    @Test("the stream comes from ?stream= as on the playback endpoints; a different body stream is a 400")
    func streamFromQuery() async throws {
        let (server, app) = PlaybackServer.make()
        try await app.test(.live) { client in
            await TestServer.waitForPlayback(server)
            let response = try await client.execute(
                uri: "/v1/say?stream=from-query", method: .post, body: ByteBuffer(string: #"{"text":"Hello there."}"#))
            #expect(response.status == .ok, "\(response.json)")
            #expect(response.json["stream"] as? String == "from-query")
            #expect(server.engine.mixer.existingStream("from-query") != nil)
            #expect(server.engine.mixer.existingStream("default") == nil)
            let same = try await client.execute(
                uri: "/v1/say?stream=both", method: .post, body: ByteBuffer(string: #"{"text":"Hi.","stream":"both"}"#))
            #expect(same.status == .ok, "\(same.json)")
            let conflict = try await client.execute(
                uri: "/v1/say?stream=one", method: .post, body: ByteBuffer(string: #"{"text":"Hi.","stream":"two"}"#))
            #expect(conflict.status == .badRequest)
            #expect(((conflict.json["error"] as? [String: Any])?["message"] as? String)?.contains("'stream'") == true)
            let bad = try await client.execute(uri: "/v1/say?stream=bad%20name", method: .post, body: ByteBuffer(string: #"{"text":"Hi."}"#))
            #expect(bad.status == .badRequest)
        }
    }

    @Test("a clear drops the rest of a long text, and the texts queued after it on that stream")
    func clearDropsQueuedSpeech() async throws {
        // Past the default --max-say-seconds, so each text holds more than the stream's queue bound.
        let (server, app) = TestServer.make(TestServer.configuration { $0.limits.maxSaySeconds = 3600 })
        try await app.test(.live) { client in
            await TestServer.waitForPlayback(server)
            let text = String(repeating: "The gateway keeps every client served while a long text is spoken. ", count: 50)
            let body = ByteBuffer(string: "{\"text\":\"\(text)\"}")
            let first = try await client.execute(uri: "/v1/say?stream=long", method: .post, body: body)
            #expect(first.status == .ok, "\(first.json)")
            let second = try await client.execute(uri: "/v1/say?stream=long", method: .post, body: body)
            #expect(second.status == .ok, "\(second.json)")
            let duration = try #require(first.json["duration_ms"] as? Int)
            #expect(duration > 120_000, "duration_ms \(duration)")
            // The stream holds at most its queue bound, not both texts.
            let stream = try #require(server.engine.mixer.existingStream("long"))
            #expect(stream.queuedMilliseconds <= 61_000, "queued \(stream.queuedMilliseconds) ms")
            let flush = try await client.execute(uri: "/v1/playback?stream=long", method: .delete)
            #expect(flush.status == .ok)
            // Nothing of either text is queued after the clear, not even the slice that was waiting for room.
            for _ in 0..<15 {
                try await Task.sleep(for: .milliseconds(100))
                #expect(stream.queuedMilliseconds == 0, "queued \(stream.queuedMilliseconds) ms after the clear")
            }
            // Both feeds ended: a new text on the stream is queued at once, not after them.
            let third = try await client.execute(uri: "/v1/say?stream=long", method: .post, body: ByteBuffer(string: #"{"text":"Again."}"#))
            #expect(third.status == .ok, "\(third.json)")
            let queued = await Poll.until(seconds: 2) { stream.queuedMilliseconds > 0 || server.engine.mixer.existingStream("long") !== stream }
            #expect(queued != nil, "the text after the clear was not queued")
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
