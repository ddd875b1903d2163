@testable import AudioGateServer
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// `POST /v1/sendspin/command` and `POST /v1/sendspin/pairing` before any server is reached: what
/// they refuse and how.
@Suite("Sendspin controller route")
struct SendspinCommandRouteTests {
    private func post(_ client: some TestClientProtocol, _ body: String) async throws -> TestResponse {
        try await client.execute(uri: "/v1/sendspin/command", method: .post, body: ByteBuffer(string: body))
    }

    private func code(_ response: TestResponse) -> String? {
        (response.json["error"] as? [String: Any])?["code"] as? String
    }

    @Test("with the player off, a command is a 404 saying how to turn it on")
    func off() async throws {
        let (_, app) = TestServer.make(TestServer.configuration(device: "loopback"))
        try await app.test(.live) { client in
            let response = try await post(client, #"{"command":"next"}"#)
            #expect(response.status == .notFound)
            #expect(code(response) == "not_found")
            #expect(((response.json["error"] as? [String: Any])?["message"] as? String)?.contains("--sendspin-server") == true)
        }
    }

    @Test("unconnected, a known command is a 503; a bad body is a 400 first")
    func unconnected() async throws {
        let configuration = TestServer.configuration(device: "loopback") { $0.sendspin.url = "ws://127.0.0.1:9/sendspin" }
        let (_, app) = TestServer.make(configuration)
        try await app.test(.live) { client in
            let next = try await post(client, #"{"command":"next"}"#)
            #expect(next.status == .serviceUnavailable)
            #expect(code(next) == "unavailable")
            for body in ["not json", #"{"command":"bogus"}"#, #"{"volume":40}"#] {
                let response = try await post(client, body)
                #expect(response.status == .badRequest, "\(body)")
                #expect(code(response) == "bad_body", "\(body)")
            }
            let status = try await client.execute(uri: "/v1/status", method: .get)
            let sendspin = status.json["sendspin"] as? [String: Any] ?? [:]
            #expect(sendspin["metadata"] == nil && sendspin["controller"] == nil)
        }
    }

    @Test("the pairing window: 404 with the player off, 409 without a static code, open for 300 s with one")
    func pairingWindow() async throws {
        let (_, off) = TestServer.make(TestServer.configuration(device: "loopback"))
        try await off.test(.live) { client in
            let response = try await client.execute(uri: "/v1/sendspin/pairing", method: .post)
            #expect(response.status == .notFound)
            #expect(code(response) == "not_found")
        }
        let (_, plain) = TestServer.make(
            TestServer.configuration(device: "loopback") { $0.sendspin.url = "ws://127.0.0.1:9/sendspin" })
        try await plain.test(.live) { client in
            let response = try await client.execute(uri: "/v1/sendspin/pairing", method: .post)
            #expect(response.status == .conflict)
            #expect(((response.json["error"] as? [String: Any])?["message"] as? String)?.contains("--sendspin-pairing-code") == true)
            let status = try await client.execute(uri: "/v1/status", method: .get)
            #expect((status.json["sendspin"] as? [String: Any])?["pairing_window"] == nil)
        }
        let (_, coded) = TestServer.make(
            TestServer.configuration(device: "loopback") {
                $0.sendspin.url = "ws://127.0.0.1:9/sendspin"
                $0.sendspin.staticPairingCode = "24681357"
            })
        try await coded.test(.live) { client in
            let before = try await client.execute(uri: "/v1/status", method: .get)
            #expect(((before.json["sendspin"] as? [String: Any])?["pairing_window"] as? [String: Any])?["open"] as? Bool == false)
            let response = try await client.execute(uri: "/v1/sendspin/pairing", method: .post)
            #expect(response.status == .ok)
            #expect(response.json["open"] as? Bool == true)
            #expect((290...300).contains(response.json["seconds_left"] as? Int ?? 0))
            let after = try await client.execute(uri: "/v1/status", method: .get)
            #expect(((after.json["sendspin"] as? [String: Any])?["pairing_window"] as? [String: Any])?["open"] as? Bool == true)
        }
    }
}
