import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AudioGateServer

/// Clients that send `Expect: 100-continue` (curl for `-T` uploads and large bodies, several HTTP
/// libraries) hold their body back until the server answers `100 Continue`, or for a second when it
/// does not: every upload route answers it as soon as the head arrives.
@Suite("Expect: 100-continue on every upload route", .serialized)
struct ExpectContinueTests {
    /// Sends the head with the expectation, waits for the interim answer before any body byte, then
    /// sends `body` (chunked when `chunked`) and returns the interim and the final answers.
    static func upload(
        port: Int, target: String, contentType: String, body: [UInt8], chunked: Bool, token: String? = nil
    ) throws -> (interim: RawHTTP.Answer?, final: RawHTTP.Answer?) {
        let connection = try RawHTTP(port: port, timeoutSeconds: 5)
        var headers = ["Content-Type: \(contentType)", "Expect: 100-continue", "Connection: close"]
        headers.append(chunked ? "Transfer-Encoding: chunked" : "Content-Length: \(body.count)")
        if let token { headers.append("Authorization: Bearer \(token)") }
        try connection.writeHead(method: "POST", target: target, port: port, headers: headers)
        // Nothing of the body is sent before the interim answer: a server that does not send it
        // leaves this read to time out, and the test fails.
        let interim = connection.readHead()
        guard interim?.status == 100 else { return (interim, nil) }
        if chunked {
            try connection.write(Array((String(body.count, radix: 16) + "\r\n").utf8) + body + Array("\r\n0\r\n\r\n".utf8))
        } else {
            try connection.write(body)
        }
        var final = connection.readHead()
        final?.rest += connection.readBody(atLeast: 1)
        return (interim, final)
    }

    @Test("POST /v1/playback (raw, chunked, with wait), /v1/recordings and /v1/say answer 100 before the body")
    func uploads() async throws {
        let (server, app) = TestServer.make(TestServer.configuration(device: "loopback") { $0.token = "s3cret" })
        try await app.test(.live) { client in
            await TestServer.waitForPlayback(server)
            let port = try #require(client.port)
            let pcm = [UInt8](repeating: 0, count: 4800)
            let cases: [(target: String, type: String, body: [UInt8], chunked: Bool, status: Int)] = [
                ("/v1/playback", "application/octet-stream", pcm, false, 200),
                ("/v1/playback?stream=expect&wait=true&rate=24000", "application/octet-stream", pcm, true, 200),
                ("/v1/recordings", "application/json", Array(#"{"max_seconds":1}"#.utf8), false, 201),
                ("/v1/say?stream=expect-say", "application/json", Array(#"{"text":"ok"}"#.utf8), true, 200),
            ]
            for upload in cases {
                let (interim, final) = try Self.upload(
                    port: port, target: upload.target, contentType: upload.type, body: upload.body, chunked: upload.chunked,
                    token: "s3cret")
                #expect(interim?.status == 100, "POST \(upload.target): \(interim.map { "\($0.status)" } ?? "no interim answer")")
                #expect(final?.status == upload.status, "POST \(upload.target): \(final.map { "\($0.status) \($0.rest)" } ?? "no answer")")
            }
        }
    }

    @Test("a refused upload gets its final error instead of 100, and its body is never asked for")
    func refused() async throws {
        let (server, app) = TestServer.make(TestServer.configuration(device: "loopback") { $0.token = "s3cret" })
        try await app.test(.live) { client in
            await TestServer.waitForPlayback(server)
            let port = try #require(client.port)
            let pcm = [UInt8](repeating: 0, count: 480)
            for (target, token, status) in [
                ("/v1/playback", nil, 401), ("/v1/playback?channels=9", "s3cret", 400), ("/v1/playback?zz=1", "s3cret", 400),
                ("/v1/say?wait=maybe", "s3cret", 400), ("//v1/recordings", nil, 401),
            ] as [(String, String?, Int)] {
                let (interim, _) = try Self.upload(
                    port: port, target: target, contentType: "application/octet-stream", body: pcm, chunked: false, token: token)
                #expect(interim?.status == status, "POST \(target): \(interim.map { "\($0.status)" } ?? "no answer")")
            }
        }
    }
}
