import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// MP3, Ogg Opus/Vorbis, FLAC and WebM uploads, heard on the test card's monitor.
@Suite("compressed playback", .serialized)
struct CompressedPlaybackTests {
    /// Length a codec may add or drop at the edges (encoder delay and padding not signalled).
    static let paddingMs = 60.0

    @Test("each format at several rates and channel counts plays at the right pitch and length without a gap")
    func formatsPlay() async throws {
        for (index, kind) in CodecFixtures.all.enumerated() {
            let frequency = 500.0 + 100 * Double(index)
            let file = try CodecFixtures.make(kind, frequency: frequency, seconds: 1)
            try await PlaybackServer.live { server, client, monitor in
                let response = try await client.execute(
                    uri: "/v1/playback?wait=true", method: .post, headers: [.contentType: kind.contentType],
                    body: ByteBuffer(bytes: file))
                #expect(response.status == .ok, "\(kind): \(response.json)")
                #expect(response.json["format"] as? String == kind.container.rawValue, "\(kind)")
                #expect(response.json["source_rate"] as? Int == kind.rate, "\(kind)")
                #expect(response.json["source_channels"] as? Int == kind.channels, "\(kind)")
                #expect(response.json["decode_error"] == nil, "\(kind)")
                let duration = try #require(response.json["duration_ms"] as? Int)
                #expect(abs(Double(duration) - 1000) <= Self.paddingMs, "\(kind): duration_ms \(duration)")
                try await Task.sleep(for: .milliseconds(100))
                monitor.stop()
                let samples = monitor.samples
                let segments = PlaybackAnalysis.segments(samples)
                try SignalCheckFailure.require(segments.count == 1, "\(kind): \(segments.count) segments (a gap)")
                let segment = segments[0]
                let heardMs = PlaybackAnalysis.milliseconds(segment.count)
                try SignalCheckFailure.require(abs(heardMs - 1000) < Self.paddingMs, "\(kind): heard \(heardMs) ms")
                let pitch = Goertzel.dominantFrequency(Array(samples[segment]), rate: PlaybackMonitor.rate, near: frequency)
                try SignalCheckFailure.require(abs(pitch - frequency) < 1, "\(kind): pitch \(pitch) Hz, sent \(frequency)")
            }
        }
    }

    @Test("?format= names the container; application/octet-stream is sniffed; two FLAC uploads join without a gap")
    func formatParameterSniffingAndJoin() async throws {
        let first = try CodecFixtures.make(CodecFixtures.flac48, frequency: 700, seconds: 0.5)
        let second = try CodecFixtures.make(CodecFixtures.flac48, frequency: 700, seconds: 0.5)
        let mp3 = try CodecFixtures.make(CodecFixtures.mp3Mono, frequency: 700, seconds: 0.3)
        try await RealTime.retryingOnSteal {
            let (server, app) = PlaybackServer.make()
            try await app.test(.live) { client in
                await TestServer.waitForPlayback(server)
                let sniffed = try await client.execute(
                    uri: "/v1/playback?stream=s", method: .post, headers: [.contentType: "application/octet-stream"],
                    body: ByteBuffer(bytes: mp3))
                #expect(sniffed.json["format"] as? String == "mp3", "\(sniffed.json)")
                let named = try await client.execute(
                    uri: "/v1/playback?stream=s&format=mp3&wait=true", method: .post, body: ByteBuffer(bytes: mp3))
                #expect(named.json["format"] as? String == "mp3", "\(named.json)")
                let monitor = try PlaybackMonitor()
                defer { monitor.stop() }
                await monitor.waitUntilRecording()
                let one = try await client.execute(
                    uri: "/v1/playback?stream=join", method: .post, headers: [.contentType: "audio/flac"],
                    body: ByteBuffer(bytes: first))
                #expect(one.status == .ok)
                let two = try await client.execute(
                    uri: "/v1/playback?stream=join&wait=true", method: .post, headers: [.contentType: "audio/flac"],
                    body: ByteBuffer(bytes: second))
                #expect(two.status == .ok)
                try await Task.sleep(for: .milliseconds(100))
                monitor.stop()
                let segments = PlaybackAnalysis.segments(monitor.samples)
                try SignalCheckFailure.require(segments.count == 1, "\(segments.count) segments: a gap between uploads")
                let heardMs = PlaybackAnalysis.milliseconds(segments[0].count)
                try SignalCheckFailure.require(abs(heardMs - 1000) < 30, "heard \(heardMs) ms")
                let report = PhaseContinuity.check(monitor.samples, frequency: 700, rate: PlaybackMonitor.rate)
                try SignalCheckFailure.require(report.gaps.isEmpty, "gaps \(report.gaps)")
            }
        }
    }
}
