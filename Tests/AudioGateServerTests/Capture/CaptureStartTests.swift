import AudioGateCore
import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AudioGateServer

/// The first seconds of a server's capture on the test card, where the sound server's reported
/// latency is libpulse's interpolation until its first timing update (about 1.2 s in) and can be
/// 50-120 ms off before it corrects itself at once.
@Suite("capture from a fresh server", .serialized)
struct CaptureStartTests {
    @Test("a client right after start: no capture lost in the first 5 s, timestamps on the sample count over 10 s")
    func freshServer() async throws {
        try await RealTime.retryingOnSteal {
            // The server's defaults: the device opens at start and idles after 5 s without clients.
            let (server, app) = TestServer.make(TestServer.configuration { $0.deviceIdleMilliseconds = 5000 })
            try await app.test(.live) { client in
                let lostAtFive = Locked<Double?>(nil)
                let hub = server.engine.captureHub
                let stream = try await CaptureClient.receive(client, "rate=16000&chunk_ms=20&encoding=json", seconds: 10.5) { stream in
                    if let first = stream.audio.first, let last = stream.audio.last, last.timestampMs - first.timestampMs >= 5000 {
                        lostAtFive.withLock { $0 = $0 ?? hub.lostMilliseconds }
                    }
                    return false
                }
                let audio = stream.audio
                try #require(audio.count >= 500, "\(audio.count) chunks in 10 s")
                #expect(audio.enumerated().allSatisfy { $0.element.seq == UInt64($0.offset) }, "seq has a gap")
                let lost = try #require(lostAtFive.value)
                try SignalCheckFailure.require(lost == 0, "lost_ms \(lost) in the first 5 s of a fresh server")
                // Chunk i starts 20 i ms after chunk 0 on the sample count; its timestamp stays within 5 ms of that.
                let drift = audio.enumerated().map { $0.element.timestampMs - audio[0].timestampMs - Double($0.offset) * 20 }
                let worst = drift.max { abs($0) < abs($1) } ?? 0
                let at = drift.firstIndex { abs($0) > 5 }
                let course = stride(from: 0, to: drift.count, by: 25).map { String(format: "%.1f", drift[$0]) }.joined(separator: " ")
                try SignalCheckFailure.require(
                    at == nil,
                    "timestamps left the sample count by \(String(format: "%.1f", worst)) ms (first at chunk \(at ?? -1)); every 0.5 s: \(course)")
            }
        }
    }
}
