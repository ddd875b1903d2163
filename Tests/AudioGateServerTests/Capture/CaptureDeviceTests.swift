import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import HummingbirdWSTesting
import Testing

@Suite("capture through device loss", .serialized)
struct CaptureDeviceTests {
    @Test("when the device goes away and comes back the socket stays open, device events arrive and audio resumes")
    func lostAndRestored() async throws {
        let (server, app) = TestServer.make()
        defer { if !TestCard.isRunning { TestCard.start() } }
        try await app.test(.live) { client in
            #expect(await Poll.until(seconds: 5) { server.engine.capture.monitor.snapshot.state == .running } != nil)
            let stream = Task {
                try await CaptureClient.receive(client, "encoding=json", seconds: 30) { stream in
                    // Done once 25 chunks arrived after the restore.
                    guard let restored = stream.events.first(where: { $0.json["state"] as? String == "restored" }) else {
                        return false
                    }
                    return stream.audio.count >= restored.index + 25
                }
            }
            try await Task.sleep(for: .seconds(1))
            TestCard.kill()
            #expect(await Poll.until(seconds: 10) { server.engine.captureHub.isDeviceLost } != nil)
            try await Task.sleep(for: .seconds(0.5))
            TestCard.start()
            let result = try await stream.value
            let states = result.events(ofType: "device").compactMap { $0["state"] as? String }
            #expect(states == ["lost", "restored"])
            let restored = try #require(result.events.first { $0.json["state"] as? String == "restored" })
            #expect(result.audio.count >= restored.index + 25, "audio did not resume")
            #expect(result.audio.enumerated().allSatisfy { $0.element.seq == UInt64($0.offset) })
            #expect(server.engine.captureHub.lostMilliseconds > 500)
        }
    }
}
