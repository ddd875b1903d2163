import Foundation
import Testing

@testable import AudioGateServer

@Suite("player status")
struct PlayerStatusTests {
    @Test("what every player has, its own fields and its stream's playout encode as one flat object")
    func flat() throws {
        var statistics = TimedPlaybackStatistics()
        statistics.bufferedMilliseconds = 120.5
        statistics.framesDropped = 3
        statistics.lateChunks = 2
        statistics.offsetMicroseconds = 40
        let status = PlayerStatus(
            connected: true, server: "127.0.0.1:1704", clockOffsetMs: 1.5,
            player: SnapcastStatus(
                clockJitterMs: 0.1, bufferMs: 1000, codec: "pcm", rate: 48000, channels: 2, volume: 100, muted: false),
            playout: TimedPlayoutStatus(statistics), connections: 1, lastError: nil)
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let object = try #require(JSONSerialization.jsonObject(with: encoder.encode(status)) as? [String: Any])
        #expect(object["player"] == nil && object["playout"] == nil)
        #expect(object["connected"] as? Bool == true && object["server"] as? String == "127.0.0.1:1704")
        #expect(object["clock_offset_ms"] as? Double == 1.5 && object["clock_jitter_ms"] as? Double == 0.1)
        #expect(object["connections"] as? Int == 1 && object["codec"] as? String == "pcm" && object["last_error"] == nil)
        #expect(object["queued_ms"] as? Double == 120.5 && object["frames_dropped"] as? Int == 3)
        #expect(object["late_chunks"] as? Int == 2 && object["play_offset_ms"] as? Double == 0.04)
        #expect(object["frames_inserted"] as? Int == 0 && object["resyncs"] as? Int == 0)
        // Zeros before a stream exists, and no play offset.
        let idle = TimedPlayoutStatus(nil)
        #expect(idle.queuedMs == 0 && idle.framesDropped == 0 && idle.playOffsetMs == nil)
    }
}
