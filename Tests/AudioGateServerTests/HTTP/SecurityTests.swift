import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AudioGateServer

@Suite("security defaults")
struct SecurityPolicyTests {
    let policy: SecurityPolicy = {
        var configuration = ServerConfiguration()
        configuration.allowedHosts = ["audio.lan"]
        configuration.allowedOrigins = ["https://app.example"]
        configuration.token = "s3cret"
        return SecurityPolicy(configuration: configuration)
    }()

    @Test("loopback names with our port pass; rebinding names, odd spellings and other ports do not")
    func hosts() {
        for good in ["localhost:8750", "127.0.0.1:8750", "[::1]:8750", "LOCALHOST:8750", "localhost", "audio.lan:8750"] {
            #expect(policy.allowsHost(good), "\(good)")
        }
        for bad in [
            "evil.example", "evil.example:8750", "localhost6:8750", "127.1:8750", "0x7f.0.0.1:8750", "2130706433:8750",
            "localhost:9999", "[::1", "", "localhost:8750:1", "127.0.0.1.evil.example:8750",
        ] {
            #expect(!policy.allowsHost(bad), "\(bad)")
        }
        #expect(!policy.allowsHost(nil))
    }

    @Test("only our own origin and allowed origins pass; IP-literal and null origins do not")
    func origins() {
        #expect(policy.allowsOrigin("http://localhost:8750", host: "localhost:8750"))
        #expect(policy.allowsOrigin("https://app.example", host: "localhost:8750"))
        #expect(policy.allowsOrigin("https://app.example/", host: "localhost:8750"))
        #expect(!policy.allowsOrigin("https://evil.example", host: "localhost:8750"))
        #expect(!policy.allowsOrigin("http://127.0.0.1:3000", host: "localhost:8750"))
        #expect(!policy.allowsOrigin("http://localhost:3000", host: "localhost:8750"))
        #expect(!policy.allowsOrigin("null", host: "localhost:8750"))
        // Every loopback name of our own port is our own origin, whichever one the Host header uses.
        for page in ["http://localhost:8750", "http://127.0.0.1:8750", "http://[::1]:8750"] {
            for host in ["localhost:8750", "127.0.0.1:8750", "[::1]:8750"] {
                #expect(policy.allowsOrigin(page, host: host), "\(page) calling \(host)")
            }
        }
        #expect(!policy.allowsOrigin("http://127.0.0.1:3000", host: "127.0.0.1:8750"))
        #expect(!policy.allowsOrigin("http://localhost", host: "127.0.0.1:8750"))
        #expect(!policy.allowsOrigin("https://127.0.0.1:8750", host: "localhost:8750"))
        #expect(!policy.allowsOrigin("http://localhost6:8750", host: "localhost:8750"))
        #expect(!policy.allowsOrigin("http://localhost:8750", host: "audio.lan:8750"))
        #expect(policy.allowsOrigin("ws://localhost", host: "localhost:8750"))
        #expect(policy.allowsOrigin("ws://127.0.0.1:8750", host: "localhost:8750"))
        #expect(!policy.allowsOrigin("ws://evil.example", host: "localhost:8750"))
    }

    @Test("the token is required and compared exactly")
    func token() {
        #expect(policy.allowsToken(authorization: "Bearer s3cret", queryToken: nil))
        #expect(policy.allowsToken(authorization: "bearer s3cret", queryToken: nil))
        #expect(policy.allowsToken(authorization: nil, queryToken: "s3cret"))
        #expect(!policy.allowsToken(authorization: nil, queryToken: nil))
        #expect(!policy.allowsToken(authorization: "Bearer s3cre", queryToken: nil))
        #expect(!policy.allowsToken(authorization: "Bearer s3cret2", queryToken: nil))
        #expect(!policy.allowsToken(authorization: "Basic s3cret", queryToken: nil))
        #expect(SecurityPolicy(configuration: ServerConfiguration()).allowsToken(authorization: nil, queryToken: nil))
    }
}

@Suite("security on the live server", .serialized)
struct SecurityLiveTests {
    @Test("a foreign Origin is refused with 403 on HTTP and on a WebSocket upgrade")
    func foreignOrigin() async throws {
        let (_, app) = TestServer.make()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let http = try Curl.request(port: port, path: "/v1/status", headers: ["Origin: https://evil.example"])
            #expect(http.status == 403)
            #expect(http.body.contains("forbidden_origin"))
            let ws = try Curl.request(port: port, path: "/v1/capture", headers: Curl.upgrade + ["Origin: https://evil.example"])
            #expect(ws.status == 403)
            let own = try Curl.request(port: port, path: "/v1/status", headers: ["Origin: http://127.0.0.1:\(port)"])
            #expect(own.status == 200)
            // A page from localhost calling 127.0.0.1 (and the other way round) is the same server.
            let aliased = try Curl.request(port: port, path: "/v1/status", headers: ["Origin: http://localhost:\(port)"])
            #expect(aliased.status == 200)
            let aliasedSocket = try Curl.request(
                port: port, path: "/v1/capture", headers: Curl.upgrade + ["Origin: http://localhost:\(port)"], maxTime: 1)
            #expect(aliasedSocket.status == 101)
            let otherPort = try Curl.request(port: port, path: "/v1/status", headers: ["Origin: http://localhost:\(port + 1)"])
            #expect(otherPort.status == 403)
        }
    }

    @Test("a foreign Host (DNS rebinding) is refused with 421")
    func foreignHost() async throws {
        let (_, app) = TestServer.make()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let response = try Curl.request(port: port, path: "/v1/status", headers: ["Host: evil.example:\(port)"])
            #expect(response.status == 421)
            #expect(response.body.contains("misdirected_request"))
            let ws = try Curl.request(port: port, path: "/v1/capture", headers: Curl.upgrade + ["Host: evil.example"])
            #expect(ws.status == 421)
        }
    }

    @Test("with a token: none is 401 with WWW-Authenticate, the right one works, healthz stays open")
    func token() async throws {
        let (_, app) = TestServer.make(TestServer.configuration { $0.token = "s3cret" })
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let missing = try Curl.request(port: port, path: "/v1/status")
            #expect(missing.status == 401)
            #expect(missing.headers.lowercased().contains("www-authenticate: bearer"))
            let wrong = try Curl.request(port: port, path: "/metrics", headers: ["Authorization: Bearer nope"])
            #expect(wrong.status == 401)
            let right = try Curl.request(port: port, path: "/v1/status", headers: ["Authorization: Bearer s3cret"])
            #expect(right.status == 200)
            let query = try Curl.request(port: port, path: "/v1/status?token=s3cret")
            #expect(query.status == 200)
            let health = try Curl.request(port: port, path: "/healthz")
            #expect(health.status == 200)
        }
    }

    @Test("CORS preflight is answered for allowed origins only")
    func preflight() async throws {
        let (_, app) = TestServer.make(TestServer.configuration { $0.allowedOrigins = ["https://app.example"] })
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let allowed = try Curl.request(
                port: port, path: "/v1/playback", method: "OPTIONS",
                headers: ["Origin: https://app.example", "Access-Control-Request-Method: POST"])
            #expect(allowed.status == 204)
            #expect(allowed.headers.lowercased().contains("access-control-allow-origin: https://app.example"))
            let refused = try Curl.request(
                port: port, path: "/v1/playback", method: "OPTIONS",
                headers: ["Origin: https://evil.example", "Access-Control-Request-Method: POST"])
            #expect(refused.status == 403)
        }
    }
}
