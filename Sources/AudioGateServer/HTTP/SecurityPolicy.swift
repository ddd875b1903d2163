import Foundation
import HTTPTypes

/// Who may talk to the server: Host names (DNS rebinding), Origins (cross-site requests and
/// WebSocket hijacking) and the optional bearer token.
public struct SecurityPolicy: Sendable {
    /// Host names that always mean this machine; odd spellings (`127.1`, `0x7f.0.0.1`, `localhost6`) are not here on purpose.
    static let loopbackHosts: Set<String> = ["localhost", "127.0.0.1", "[::1]"]

    let port: Int
    let allowedHosts: Set<String>
    let allowedOrigins: Set<String>
    let token: [UInt8]?

    public init(configuration: ServerConfiguration) {
        port = configuration.port
        allowedHosts = Set(configuration.allowedHosts.map { $0.lowercased() })
        allowedOrigins = Set(configuration.allowedOrigins.map { Self.normalizeOrigin($0) })
        token = configuration.token.map { Array($0.utf8) }
    }

    /// The refusal for a request, or nil when it may proceed: Host (421), then Origin (403), then
    /// the route: a path no declaration matches is a 404, and every route not declared public needs
    /// the token (401). One rule set for HTTP routes and WebSocket upgrades, on the canonical path.
    func refusal(
        method: HTTPRequest.Method, path: String, host: String?, origin: String?, authorization: String?, queryToken: String?
    ) -> APIError? {
        guard allowsHost(host) else {
            return APIError(.misdirectedRequest, "Host '\(host ?? "")' is not this server; use localhost or pass --allow-host")
        }
        if let origin, !allowsOrigin(origin, host: host) {
            return APIError(.forbiddenOrigin, "Origin '\(origin)' may not use this server; pass --allow-origin to allow it")
        }
        let declared = RouteTable.routes(at: RoutePath.canonical(path))
        guard !declared.isEmpty else {
            return APIError(.notFound, "no such route; see /openapi.yaml")
        }
        // A method the path does not take is public (and then a 405) only where every method is.
        let access = declared.first { $0.method == method }?.access ?? (declared.allSatisfy { $0.access == .public } ? .public : .token)
        if access == .token, !allowsToken(authorization: authorization, queryToken: queryToken) {
            return APIError(.unauthorized, "missing or wrong token: send 'Authorization: Bearer TOKEN'")
        }
        return nil
    }

    /// Splits a Host header into a lower-cased name and an optional port; nil when malformed.
    static func splitHost(_ host: String) -> (name: String, port: Int?)? {
        let host = host.lowercased()
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let name = String(host[...close])
            let rest = host[host.index(after: close)...]
            if rest.isEmpty { return (name, nil) }
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()) else { return nil }
            return (name, port)
        }
        let parts = host.split(separator: ":", omittingEmptySubsequences: false)
        switch parts.count {
        case 1: return parts[0].isEmpty ? nil : (String(parts[0]), nil)
        case 2:
            guard !parts[0].isEmpty, let port = Int(parts[1]) else { return nil }
            return (String(parts[0]), port)
        default: return nil
        }
    }

    /// True when the Host header names this server: a loopback name or an allowed host, with our port.
    func allowsHost(_ header: String?) -> Bool {
        guard let header, let (name, hostPort) = Self.splitHost(header) else { return false }
        if allowedHosts.contains(header.lowercased()) || allowedHosts.contains(name) {
            return hostPort == nil || port == 0 || hostPort == port
        }
        guard Self.loopbackHosts.contains(name) else { return false }
        // A missing port is the scheme default; an ephemeral test port (0) accepts any.
        return hostPort == nil || port == 0 || hostPort == port
    }

    /// True for the server's own origin (the page it serves, same Host) or an allowed origin.
    func allowsOrigin(_ origin: String, host: String?) -> Bool {
        let normalized = Self.normalizeOrigin(origin)
        if allowedOrigins.contains(normalized) { return true }
        // WebSocket client libraries send their own ws:// URL as Origin; no browser page has such an
        // origin, so a loopback one is a local program, not a cross-site page.
        for scheme in ["ws://", "wss://"] where normalized.hasPrefix(scheme) {
            if let (name, _) = Self.splitHost(String(normalized.dropFirst(scheme.count))) {
                return Self.loopbackHosts.contains(name)
            }
        }
        guard let host else { return false }
        if normalized == "http://" + host.lowercased() { return true }
        // Every loopback name of our own port is our own origin: a page loaded from localhost may
        // call 127.0.0.1 or [::1] on the same port, since all of them reach this server only.
        guard normalized.hasPrefix("http://"), let own = Self.splitHost(host), Self.loopbackHosts.contains(own.name),
            let page = Self.splitHost(String(normalized.dropFirst("http://".count))),
            Self.loopbackHosts.contains(page.name)
        else { return false }
        return (page.port ?? 80) == (own.port ?? 80)
    }

    /// True when no token is configured or the request carries it (header or `?token=`).
    func allowsToken(authorization: String?, queryToken: String?) -> Bool {
        guard let token else { return true }
        if let authorization, authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " {
            return Self.constantTimeEquals(Array(authorization.dropFirst(7).utf8), token)
        }
        if let queryToken {
            return Self.constantTimeEquals(Array(queryToken.utf8), token)
        }
        return false
    }

    /// Compares without an early exit, so response time does not reveal how much of a guess matched.
    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
        for index in 0..<max(a.count, b.count) {
            let x = index < a.count ? a[index] : 0
            let y = index < b.count ? b[index] : 0
            difference |= x ^ y
        }
        return difference == 0
    }

    static func normalizeOrigin(_ origin: String) -> String {
        var origin = origin.lowercased()
        while origin.hasSuffix("/") { origin.removeLast() }
        return origin
    }
}
