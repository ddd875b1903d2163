import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Bad requests get a clean JSON error (or a closed connection) and the server keeps serving.
@Suite("request errors", .serialized)
struct RequestErrorTests {
    @Test("a known path with the wrong method is a 405 naming the allowed methods")
    func wrongMethod() async throws {
        let (_, app) = TestServer.make()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            for (method, path, allow) in [("POST", "/healthz", "GET"), ("PUT", "/v1/playback", "GET, POST, DELETE"), ("DELETE", "/v1/volume", "GET, PUT")] {
                let response = try Curl.request(port: port, path: path, method: method)
                #expect(response.status == 405, "\(method) \(path)")
                #expect(response.headers.lowercased().contains("allow: \(allow.lowercased())"), "\(response.headers)")
                #expect(response.body.contains("method_not_allowed"))
            }
            let unknown = try Curl.request(port: port, path: "/v1/nothing", method: "POST")
            #expect(unknown.status == 404)
        }
    }

    @Test("a query parameter the route does not take is a 400 naming it, on HTTP and on a WebSocket upgrade")
    func unknownParameters() async throws {
        let (server, app) = TestServer.make()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let cases: [(method: String, path: String, name: String)] = [
                ("GET", "/v1/status?verbose=1", "verbose"),
                ("GET", "/healthz?x=1", "x"),
                ("POST", "/v1/say?rate=16000", "rate"),
                ("POST", "/v1/playback?stream=a&loop=true", "loop"),
                ("DELETE", "/v1/playback?streams=a", "streams"),
                ("GET", "/v1/capture?rate=16000&chunkms=20", "chunkms"),
            ]
            for (method, path, name) in cases {
                let response = try Curl.request(port: port, path: path, method: method, body: method == "POST" ? "{}" : nil)
                #expect(response.status == 400, "\(method) \(path): \(response.body)")
                #expect(response.body.contains("bad_parameter") && response.body.contains("'\(name)'"), "\(method) \(path): \(response.body)")
            }
            for path in ["/v1/capture?rate=16000&chunkms=20", "/v1/playback?stream=a&loop=true"] {
                let upgrade = try Curl.request(port: port, path: path, headers: Curl.upgrade)
                #expect(upgrade.status == 400, "\(path): \(upgrade.body)")
                #expect(upgrade.body.contains("bad_parameter"), "\(path): \(upgrade.body)")
            }
            #expect(server.engine.mixer.queuedMilliseconds == 0)
            // Documented parameters, and `token`, still pass.
            #expect(try Curl.request(port: port, path: "/v1/status?token=unused").status == 200)
            #expect(try Curl.request(port: port, path: "/v1/playback?stream=a&rate=16000&channels=1&format=s16le").status == 200)
        }
    }

    @Test("a body labelled audio/wav that is not WAV is refused and nothing plays")
    func mislabelledWAV() async throws {
        let (server, app) = TestServer.make()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let response = try Curl.request(
                port: port, path: "/v1/playback?stream=label", method: "POST", headers: ["Content-Type: audio/wav"],
                body: String(repeating: "not a wav file ", count: 100))
            #expect(response.status == 400)
            #expect(response.body.contains("bad_body"))
            #expect(server.engine.mixer.queuedMilliseconds == 0)
            #expect(try Curl.request(port: port, path: "/healthz").status == 200)
        }
    }

    @Test("headers beyond --max-header-bytes are a 413 at once, garbage a 400, and the server keeps serving")
    func oversizedHeaders() async throws {
        let (_, app) = TestServer.make(TestServer.configuration { $0.limits.maxHeaderBytes = 4096 })
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let response = try Curl.request(
                port: port, path: "/healthz", headers: ["X-Padding: " + String(repeating: "a", count: 8192)])
            #expect(response.status == 413)
            #expect(response.body.contains("too_large"))
            // Bytes that are not HTTP at all get a JSON 400 and a closed connection, not silence.
            let garbage = """
                import socket, sys
                s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
                s.sendall(b"GARBAGE\\x01\\x02 \\r\\n\\r\\n")
                reply = b""
                while chunk := s.recv(4096):
                    reply += chunk
                assert reply.startswith(b"HTTP/1.1 400") and b"bad_request" in reply, reply
                """
            #expect(TestCard.run("python3", "-c", garbage, String(port)) == 0)
            #expect(try Curl.request(port: port, path: "/healthz").status == 200)
        }
    }

    @Test("connections past --max-connections get a 503 too_many_connections at once and are closed; then it serves again")
    func connectionsBounded() async throws {
        let (_, app) = TestServer.make(TestServer.configuration { $0.limits.maxConnections = 8 })
        try await app.test(.live) { client in
            let port = try #require(client.port)
            // Twelve idle sockets: at most eight are taken (nothing is sent to them), the rest are
            // answered before they send anything, and the server closes its side.
            let fill = """
                import socket, sys
                held, accepted, refused = [], 0, []
                for _ in range(12):
                    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
                    held.append(s)
                    s.settimeout(0.3)
                    try:
                        reply = s.recv(4096)
                    except socket.timeout:
                        accepted += 1
                        continue
                    s.settimeout(3)
                    while chunk := s.recv(4096):
                        reply += chunk
                    refused.append(reply)
                assert accepted <= 8 and len(refused) >= 4 and accepted + len(refused) == 12, (accepted, len(refused))
                for reply in refused:
                    assert reply.startswith(b"HTTP/1.1 503") and b"too_many_connections" in reply, reply
                    assert b"Connection: close" in reply, reply
                """
            #expect(TestCard.run("python3", "-c", fill, String(port)) == 0)
            let served = await Poll.until(seconds: 3) { (try? Curl.request(port: port, path: "/healthz").status) == 200 }
            #expect(served != nil, "the server serves again once the idle sockets closed")
        }
    }
}
