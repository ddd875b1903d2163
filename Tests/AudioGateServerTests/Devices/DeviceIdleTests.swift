import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// Devices nobody uses stop after `deviceIdleMilliseconds` and start again for the next client,
/// on the test card: what a client then hears and gets is what it would from a running device.
@Suite("idle devices", .serialized)
struct DeviceIdleTests {
    static func make() -> (AudioGateServer, some ApplicationProtocol) {
        TestServer.make(TestServer.configuration { $0.deviceIdleMilliseconds = 300 })
    }

    static func bothIdle(_ server: AudioGateServer) -> Bool {
        server.engine.capture.monitor.snapshot.state == .idle && server.engine.playback.monitor.snapshot.state == .idle
    }

    @Test("unused devices stop; a capture client restarts capture with every chunk in sequence and no lost time")
    func captureAfterIdle() async throws {
        try await RealTime.retryingOnSteal {
            let (server, app) = Self.make()
            try await app.test(.live) { client in
                #expect(await Poll.until(seconds: 10) { Self.bothIdle(server) } != nil, "devices did not stop")
                let framesWhileIdle = server.engine.capture.monitor.snapshot.frames
                let xrunsBefore = server.engine.capture.monitor.snapshot.xruns
                try await Task.sleep(for: .milliseconds(300))
                #expect(server.engine.capture.monitor.snapshot.frames == framesWhileIdle, "an idle device still reads")

                let stream = try await CaptureClient.receive(client, "encoding=json", seconds: 5) { $0.audio.count >= 50 }
                #expect(stream.audio.count >= 50, "\(stream.audio.count) chunks after the restart")
                #expect(stream.audio.enumerated().allSatisfy { $0.element.seq == UInt64($0.offset) })
                #expect(server.engine.captureHub.lostMilliseconds == 0, "the idle time was counted as lost")
                #expect(server.engine.playback.monitor.snapshot.state == .idle, "capture woke playback")
                #expect(await Poll.until(seconds: 5) { server.engine.capture.monitor.snapshot.state == .idle } != nil)
                #expect(server.engine.capture.monitor.snapshot.xruns == xrunsBefore, "before idle: \(xrunsBefore); \(server.engine.capture.monitor.snapshot.lastError ?? "")")
            }
        }
    }

    @Test("a status reader gets a live level: reading /v1/status starts the capture device, not the speaker")
    func statusWakesCapture() async throws {
        let (server, app) = Self.make()
        try await app.test(.live) { client in
            #expect(await Poll.until(seconds: 10) { Self.bothIdle(server) } != nil, "devices did not stop")
            // Each read starts the device for one idle period; the state it reports follows within a period or so.
            var states: (capture: String?, playback: String?) = (nil, nil)
            let deadline = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < deadline {
                let response = try await client.execute(uri: "/v1/status", method: .get)
                #expect(response.status == .ok)
                states = (
                    (response.json["capture"] as? [String: Any])?["state"] as? String,
                    (response.json["playback"] as? [String: Any])?["state"] as? String
                )
                if states.capture == "running" { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(states.capture == "running", "capture stayed idle while /v1/status was read")
            #expect(states.playback == "idle")
        }
    }

    @Test("a POST after idle restarts playback: the tone is heard whole, at pitch, and wait=true reports it all played")
    func playbackAfterIdle() async throws {
        try await RealTime.retryingOnSteal {
            let (server, app) = Self.make()
            try await app.test(.live) { client in
                #expect(await Poll.until(seconds: 10) { Self.bothIdle(server) } != nil, "devices did not stop")
                let monitor = try PlaybackMonitor()
                defer { monitor.stop() }
                await monitor.waitUntilRecording()
                let tone = SampleConversion.encode(
                    Signal.sine(frequency: 700, rate: 24000, seconds: 1, amplitude: 0.5), format: .s16le)
                let response = try await client.execute(
                    uri: "/v1/playback?wait=true", method: .post,
                    headers: [.contentType: "application/octet-stream"], body: ByteBuffer(bytes: tone))
                #expect(response.status == .ok)
                let played = try #require(response.json["played_ms"] as? Int)
                #expect(abs(played - 1000) <= 10)
                try await Task.sleep(for: .milliseconds(100))
                monitor.stop()
                _ = try PlaybackAnalysis.singleTone(monitor.samples, frequency: 700, expectedMs: 1000, toleranceMs: 30)
                #expect(await Poll.until(seconds: 5) { server.engine.playback.monitor.snapshot.state == .idle } != nil)
            }
        }
    }
}
