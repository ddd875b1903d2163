import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AudioGateServer

@Suite("browser demo page", .serialized)
struct PageTests {
    /// The repository's examples/browser/index.html, found from this file's path.
    static let sourceURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("examples/browser/index.html")

    @Test("the copy the build embeds is byte for byte examples/browser/index.html")
    func embeddedCopyMatches() throws {
        let source = try Data(contentsOf: Self.sourceURL)
        #expect(Data(DemoPage.html.utf8) == source)
    }

    @Test("GET / serves the page as HTML, uncached, with a strict CSP naming the WebSocket origin")
    func served() async throws {
        let (_, app) = TestServer.make(TestServer.configuration(device: "loopback"))
        try await app.test(.live) { client in
            let response = try await client.execute(uri: "/", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "text/html; charset=utf-8")
            #expect(response.headers[.cacheControl] == "no-cache")
            let body = String(decoding: response.body.readableBytesView, as: UTF8.self)
            #expect(body == DemoPage.html)
            for id in ["meter", "wave", "listen", "record", "speak", "stop", "drop", "file", "status", "log", "token"] {
                #expect(body.contains("id=\"\(id)\""), "element #\(id)")
            }
            let policy = response.headers[.contentSecurityPolicy] ?? ""
            #expect(policy.contains("default-src 'self'"))
            #expect(policy.contains("script-src 'self' 'unsafe-inline' blob:"))
            #expect(policy.contains("worker-src 'self' blob:"))
            #expect(policy.contains("connect-src 'self' ws://"), "\(policy)")
            #expect(policy.contains("frame-ancestors 'none'"))
        }
    }

    @Test("the page needs no token, and a Host with odd characters stays out of the CSP")
    func publicAndSafe() async throws {
        let (_, app) = TestServer.make(TestServer.configuration(device: "loopback") { $0.token = "secret" })
        try await app.test(.live) { client in
            let response = try await client.execute(uri: "/", method: .get)
            #expect(response.status == .ok)
        }
        #expect(AudioGateServer.pageContentSecurityPolicy(host: "x; script-src *").contains("connect-src 'self';"))
        #expect(AudioGateServer.pageContentSecurityPolicy(host: "localhost:8750").contains("connect-src 'self' ws://localhost:8750 wss://localhost:8750;"))
        #expect(AudioGateServer.pageContentSecurityPolicy(host: "[::1]:8750").contains("ws://[::1]:8750"))
    }

    /// The repository's clients/browser/audiogate.js.
    static let moduleURL = sourceURL.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("clients/browser/audiogate.js")

    @Test("the module the build embeds is byte for byte clients/browser/audiogate.js, and the page imports it")
    func embeddedModuleMatches() throws {
        let source = try Data(contentsOf: Self.moduleURL)
        #expect(Data(BrowserModule.javascript.utf8) == source)
        #expect(DemoPage.html.contains("from \"/v1/audiogate.js\""))
    }

    @Test("GET /v1/audiogate.js serves JavaScript without a token, to allowed origins only")
    func moduleServed() async throws {
        let (_, app) = TestServer.make(TestServer.configuration(device: "loopback") {
            $0.token = "secret"
            $0.allowedOrigins = ["http://app.example"]
        })
        try await app.test(.live) { client in
            let response = try await client.execute(uri: "/v1/audiogate.js", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "text/javascript; charset=utf-8")
            #expect(response.headers[.cacheControl] == "no-cache")
            #expect(String(decoding: response.body.readableBytesView, as: UTF8.self) == BrowserModule.javascript)

            let allowed = try await client.execute(uri: "/v1/audiogate.js", method: .get, headers: [.origin: "http://app.example"])
            #expect(allowed.status == .ok)
            #expect(allowed.headers[.accessControlAllowOrigin] == "http://app.example")
            let foreign = try await client.execute(uri: "/v1/audiogate.js", method: .get, headers: [.origin: "http://evil.example"])
            #expect(foreign.status == .forbidden)
            // The token exemption is this one path: the rest of /v1 still needs it.
            let status = try await client.execute(uri: "/v1/status", method: .get)
            #expect(status.status == .unauthorized)
        }
    }
}
