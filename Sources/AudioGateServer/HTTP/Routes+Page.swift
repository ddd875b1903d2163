import HTTPTypes
import Hummingbird
import NIOCore

extension AudioGateServer {
    /// `GET /`: the browser demo page (examples/browser/index.html), and `GET /v1/audiogate.js`: the
    /// browser module it imports (clients/browser/audiogate.js), both embedded at build time by the
    /// EmbedDocuments plugin. Public like `/openapi.yaml`; the page itself sends the token, if
    /// any, on its API calls.
    func addPageRoutes(to router: Router<AudioGateRequestContext>) {
        // Encoded once; every response shares the bytes (ByteBuffer is copy-on-write).
        let page = ByteBuffer(string: DemoPage.html)
        router.on(RouteTable.page) { request, _ in
            var headers = Self.pageHeaders
            headers[.contentSecurityPolicy] = Self.pageContentSecurityPolicy(host: request.head.authority)
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: page))
        }
        // Public like the page; a page on an allowed origin imports it cross-origin, which the
        // security middleware answers with Access-Control-Allow-Origin.
        let module = ByteBuffer(string: BrowserModule.javascript)
        router.on(RouteTable.browserModule) { _, _ in
            Response(status: .ok, headers: Self.moduleHeaders, body: .init(byteBuffer: module))
        }
    }

    /// The browser module's headers: JavaScript, revalidated on every load so an upgraded server's
    /// module is used at once.
    static let moduleHeaders: HTTPFields = [
        .contentType: "text/javascript; charset=utf-8", .cacheControl: "no-cache", .xContentTypeOptions: "nosniff",
    ]

    /// The headers every page response carries besides its Content-Security-Policy.
    static let pageHeaders: HTTPFields = {
        var headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8", .cacheControl: "no-cache", .xContentTypeOptions: "nosniff",
        ]
        if let referrerPolicy = HTTPField.Name("Referrer-Policy") { headers[referrerPolicy] = "no-referrer" }
        return headers
    }()

    /// The page's Content-Security-Policy: its own inline script and style, AudioWorklet modules
    /// from blob: URLs, and network only to this server. `connect-src 'self'` does not cover
    /// WebSockets in every browser, so the ws:/wss: origin of the request's Host is listed too.
    /// The security middleware has already checked Host (421 otherwise); a value with characters a
    /// host name cannot have is still left out rather than written into the header.
    static func pageContentSecurityPolicy(host: String?) -> String {
        var connect = "'self'"
        if let host, !host.isEmpty, host.utf8.allSatisfy(Self.isHostByte) {
            connect += " ws://\(host) wss://\(host)"
        }
        return [
            "default-src 'self'",
            "script-src 'self' 'unsafe-inline' blob:",
            "worker-src 'self' blob:",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "connect-src \(connect)",
            "media-src 'self' blob:",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ].joined(separator: "; ")
    }

    /// Letters, digits and `.-:[]`: what a DNS name, an IPv4 or a bracketed IPv6 address with a port needs.
    private static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: ":"),
            UInt8(ascii: "["), UInt8(ascii: "]"):
            return true
        default:
            return false
        }
    }
}
