import AudioGateServer
import AudioGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite("info, status, devices and errors", .serialized)
struct InfoRouteTests {
    @Test("healthz answers ok")
    func healthz() async throws {
        let (_, app) = TestServer.make()
        try await app.test(.live) { client in
            let response = try await client.execute(uri: "/healthz", method: .get)
            #expect(response.status == .ok)
            #expect(response.json["status"] as? String == "ok")
        }
    }

    @Test("info reports the negotiated hardware format once the devices run")
    func info() async throws {
        let (server, app) = TestServer.make()
        try await app.test(.live) { client in
            #expect(await Poll.until(seconds: 3) { server.engine.capture.monitor.snapshot.state == .running } != nil)
            let response = try await client.execute(uri: "/v1/info", method: .get)
            #expect(response.status == .ok)
            let capture = response.json["capture"] as? [String: Any] ?? [:]
            #expect(capture["name"] as? String == "pulse")
            #expect(capture["rate"] as? Int == 48000)
            #expect(capture["period_frames"] as? Int == 480)
            #expect(capture["sample_format"] as? String != nil)
            let client = response.json["client"] as? [String: Any] ?? [:]
            #expect((client["rates"] as? [Int])?.contains(16000) == true)
            #expect(response.json["version"] as? String == AudioGateVersion.current)
        }
    }

    @Test("status counts frames moving through both devices")
    func status() async throws {
        let (server, app) = TestServer.make()
        try await app.test(.live) { client in
            #expect(await Poll.until(seconds: 3) { server.engine.capture.monitor.snapshot.frames > 4800 } != nil)
            let response = try await client.execute(uri: "/v1/status", method: .get)
            let capture = response.json["capture"] as? [String: Any] ?? [:]
            let playback = response.json["playback"] as? [String: Any] ?? [:]
            #expect(capture["state"] as? String == "running")
            #expect((capture["frames"] as? Int ?? 0) > 4800)
            #expect(playback["state"] as? String == "running")
            #expect(response.json["level"] != nil)
        }
    }

    @Test("devices lists pulse and loopback")
    func devices() async throws {
        let (_, app) = TestServer.make()
        try await app.test(.live) { client in
            let response = try await client.execute(uri: "/v1/devices", method: .get)
            let names = (response.json["devices"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            #expect(names.contains("pulse"))
            #expect(names.contains("loopback"))
        }
    }

    @Test("an unknown path is a JSON 404")
    func notFound() async throws {
        let (_, app) = TestServer.make()
        try await app.test(.live) { client in
            let response = try await client.execute(uri: "/v1/nothing-here", method: .get)
            #expect(response.status == .notFound)
            #expect(response.headers[.contentType] == "application/json")
            let error = response.json["error"] as? [String: Any] ?? [:]
            #expect(error["code"] as? String == "not_found")
        }
    }

    @Test("metrics are Prometheus text with device gauges")
    func metrics() async throws {
        let (_, app) = TestServer.make()
        try await app.test(.live) { client in
            let response = try await client.execute(uri: "/metrics", method: .get)
            #expect(response.status == .ok)
            let text = String(buffer: response.body)
            #expect(text.contains("audiogate_device_running{direction=\"capture\"}"))
            #expect(text.contains("audiogate_device_xruns"))
        }
    }

    @Test("the loopback device serves when asked for by name")
    func loopback() async throws {
        let (server, app) = TestServer.make(TestServer.configuration(device: "loopback"))
        try await app.test(.live) { client in
            #expect(await Poll.until(seconds: 3) { server.engine.capture.monitor.snapshot.state == .running } != nil)
            let response = try await client.execute(uri: "/v1/info", method: .get)
            let capture = response.json["capture"] as? [String: Any] ?? [:]
            #expect(capture["name"] as? String == "loopback")
            #expect(capture["sample_format"] as? String == "f32le")
        }
    }
}
