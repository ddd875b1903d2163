import AudioGateCore
import AudioGateTestSupport
import Foundation
import HummingbirdTesting
import NIOCore
import Testing

@testable import AudioGateServer

/// A timed stream (the one the Snapcast client feeds) is a playback stream like any other: its
/// name is its own, DELETE clears it and answers what it cleared, and status and metrics count it.
@Suite("timed stream over HTTP", .serialized, .timeLimit(.minutes(2)))
struct TimedStreamHTTPTests {
    static let rate = 48000
    static let format = AudioFormat(rate: rate, channels: 1, sampleFormat: .s16le)

    /// Offers `seconds` of a 440 Hz tone in 20 ms chunks, the first leaving the card at `start`;
    /// returns how many chunks were taken whole.
    static func offerTone(_ ingest: PlaybackIngest, seconds: Double, start: UInt64) -> Int {
        let pcm = Signal.sine(frequency: 440, rate: rate, seconds: seconds, amplitude: 0.5).map { Int16(($0 * 32767).rounded()) }
        let chunk = rate / 50
        var taken = 0
        for first in stride(from: 0, to: pcm.count, by: chunk) {
            let end = min(pcm.count, first + chunk)
            let time = start + UInt64(first) * 1_000_000_000 / UInt64(rate)
            let offer = pcm[first..<end].withUnsafeBytes { ingest.offer($0, presentedAt: time) }
            if offer == .consumed((end - first) * MemoryLayout<Int16>.size) { taken += 1 }
        }
        return taken
    }

    /// The `stream_list` entry called `name` in `/v1/status`, and the playback totals.
    static func playbackStatus(_ client: any TestClientProtocol) async throws -> [String: Any] {
        let status = try await client.execute(uri: "/v1/status", method: .get).json
        return try #require(status["playback"] as? [String: Any])
    }

    static func entry(_ name: String, in playback: [String: Any]) -> [String: Any]? {
        (playback["stream_list"] as? [[String: Any]])?.first { $0["name"] as? String == name }
    }

    static func underrunsMetric(_ client: any TestClientProtocol) async throws -> Double? {
        let text = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
        return text.split(separator: "\n").first { $0.hasPrefix("audiogate_playback_underruns_total ") }
            .flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test("a timed and a queued stream with the same name are refused")
    func sameNameRefused() async throws {
        try await PlaybackServer.live { server, client, _ in
            let mixer = server.engine.mixer
            let ingest = try mixer.acquireTimed("snapcast", role: .music, format: Self.format)
            defer { mixer.release(ingest.stream) }
            let post = try await client.execute(
                uri: "/v1/playback?stream=snapcast&rate=48000&channels=1", method: .post, body: ByteBuffer(bytes: [0, 0, 0, 0]))
            #expect(post.status == .badRequest)
            let error = try #require(post.json["error"] as? [String: Any], "\(post.json)")
            #expect(error["code"] as? String == "bad_parameter")
            #expect((error["message"] as? String ?? "").contains("timed stream"), "\(error)")
            // Nor a second timed producer on the same name: its audio would be dated by another clock.
            #expect(throws: PlaybackError(.badParameter, "a playback stream called 'snapcast' exists")) {
                try mixer.acquireTimed("snapcast", role: .music, format: Self.format)
            }

            let queued = try mixer.acquire("agent")
            defer { mixer.release(queued) }
            do throws(PlaybackError) {
                _ = try mixer.acquireTimed("agent", role: .music, format: Self.format)
                Issue.record("a timed stream took the queued stream's name")
            } catch {
                #expect(error.code == .badParameter)
                #expect(APIError(error).json.contains("\"bad_parameter\""), "\(APIError(error).json)")
            }
            // The queued stream is untouched, and the names are free again once given back.
            #expect(mixer.existingStream("agent") === queued && queued.policy == .queued)
            mixer.release(ingest.stream)
            #expect(mixer.existingStream("snapcast") == nil)
            let again = try mixer.acquireTimed("snapcast", role: .music, format: Self.format)
            #expect(again.stream.policy == .timed)
            mixer.release(again.stream)
        }
    }

    @Test("DELETE on the timed stream answers what it cleared; status and metrics count it")
    func deleteAndStatus() async throws {
        try await PlaybackServer.live { server, client, monitor in
            let mixer = server.engine.mixer
            let ingest = try mixer.acquireTimed("snapcast", role: .music, format: Self.format)
            let stream = ingest.stream
            defer { mixer.release(stream) }
            let underrunsBefore = try await Self.underrunsMetric(client) ?? 0

            // Two seconds of tone from 100 ms on; half a second in, a second and a half is queued.
            let start = MonotonicClock.nowNanoseconds() + 100_000_000
            #expect(Self.offerTone(ingest, seconds: 2, start: start) == 100)
            try await Task.sleep(for: .nanoseconds(start + 500_000_000 - MonotonicClock.nowNanoseconds()))
            let playback = try await Self.playbackStatus(client)
            let entry = try #require(Self.entry("snapcast", in: playback), "\(playback)")
            #expect(entry["timed"] as? Bool == true && entry["role"] as? String == "music")
            let entryQueued = try #require(entry["queued_ms"] as? Double)
            #expect((1300...1600).contains(entryQueued), "queued_ms \(entryQueued)")
            let totalQueued = try #require(playback["queued_ms"] as? Double)
            #expect(totalQueued >= entryQueued - 30, "playback queued_ms \(totalQueued) leaves out the timed stream's \(entryQueued)")

            let flush = try await client.execute(uri: "/v1/playback?stream=snapcast", method: .delete)
            #expect(flush.status == .ok)
            let played = try #require(flush.json["played_ms"] as? Int, "\(flush.json)")
            let flushed = try #require(flush.json["flushed_ms"] as? Int, "\(flush.json)")
            // Played counts what the mixer took (the card's buffer ahead of the speaker included),
            // from the period the tone began in; together they are the tone, give or take a period.
            #expect((400...800).contains(played), "played_ms \(played)")
            #expect((1200...1600).contains(flushed), "flushed_ms \(flushed)")
            #expect((1980...2040).contains(played + flushed), "played \(played) + flushed \(flushed) ms")
            #expect(stream.queuedMilliseconds == 0)
            #expect(try #require(stream.timing).underruns == 0)

            // The producer goes on after the clear: its next chunks play at their times, and
            // running dry at their end is an underrun in status and metrics like a queued stream's.
            let underrunsStatus = try #require(try await Self.playbackStatus(client)["underruns"] as? Int)
            let next = MonotonicClock.nowNanoseconds() + 100_000_000
            #expect(Self.offerTone(ingest, seconds: 0.2, start: next) == 10)
            try await Task.sleep(for: .nanoseconds(next + 500_000_000 - MonotonicClock.nowNanoseconds()))
            #expect(try #require(stream.timing).underruns == 1)
            let after = try await Self.playbackStatus(client)
            #expect(after["underruns"] as? Int == underrunsStatus + 1, "\(after)")
            #expect(try await Self.underrunsMetric(client) == underrunsBefore + 1)
            monitor.stop()
            // What the card had when the DELETE came is heard, and nothing after it.
            let heard = PlaybackAnalysis.segments(monitor.samples).map { PlaybackAnalysis.milliseconds($0.count) }
            #expect(heard.count == 2, "\(heard) ms heard")
            #expect(abs((heard.first ?? 0) - Double(played)) <= 40, "\(heard) ms heard, \(played) ms played")
            #expect(abs((heard.last ?? 0) - 200) <= 20, "\(heard) ms heard")
        }
    }
}
