import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import HummingbirdWSTesting
import NIOCore
import Testing
import WSClient

/// A client that sends faster than real time is held at the stream's queue limit, not buffered without bound.
@Suite("playback backpressure", .serialized)
struct PlaybackBackpressureTests {
    @Test("a stream never holds much more than its limit; everything sent still plays")
    func queueStaysBounded() async throws {
        let configuration = TestServer.configuration {
            $0.allowedOrigins = ["ws://localhost"]
            $0.limits.playbackQueueSeconds = 1
        }
        let (server, app) = TestServer.make(configuration)
        try await app.test(.live) { client in
            await TestServer.waitForPlayback(server)
            let tone = Signal.sine(frequency: 440, rate: 24000, seconds: 3, amplitude: 0.2)
            let largest = Locked(0.0)
            let watcher = Task {
                while !Task.isCancelled {
                    let queued = server.engine.mixer.queuedMilliseconds
                    largest.withLock { $0 = max($0, queued) }
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            let started = MonotonicClock.nowMilliseconds()
            let log = try await PlaybackClient.session(client) { outbound, log in
                try await PlaybackClient.send(tone, rate: 24000, chunkMs: 100, realTime: false, to: outbound)
                try await outbound.write(.text(#"{"type":"mark","name":"end"}"#))
                await log.wait(for: "mark", seconds: 10)
            }
            watcher.cancel()
            let mark = try #require(log.of("mark").first)
            // 1 s limit plus at most one half-second slice converted past it.
            #expect(largest.value <= 1600, "queued \(largest.value) ms with a 1 s limit")
            #expect(largest.value >= 900)
            #expect(mark.ms - started > 2800, "the 3 s of audio played in \(mark.ms - started) ms")
        }
    }
}
