@testable import AudioGateServer
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// `POST /v1/sendspin/command` before any server is reached: what it refuses and how.
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
}
