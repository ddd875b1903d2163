import AudioGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AudioGateServer

/// Every declared route, in every spelling a router might resolve, with every method: no spelling
/// reaches a route that needs the token without it.
@Suite("authorization by route", .serialized)
struct AuthorizationWalkTests {
    static let token = "s3cret"

    /// A concrete path for a declared one: `{name}` segments filled with values the routes accept.
    static func concrete(_ path: String) -> String {
        path.replacingOccurrences(of: "{id}", with: "abc").replacingOccurrences(of: "{segment}", with: "0.wav")
            .replacingOccurrences(of: "{file}", with: "audio.wav")
    }

    /// Spellings of `path`: repeated, leading and trailing slashes, percent-encoded letters (both hex
    /// cases), an encoded slash, `.` and `..` segments plain and encoded, and mixed case.
    static func spellings(_ path: String) -> [String] {
        var segments = path.split(separator: "/").map(String.init)
        var result = [path, "/" + path, "//" + path, path + "/", path + "//", "/." + path, "/x/.." + path, "/%2e" + path,
            "/x/%2E%2E" + path, "/../" + path]
        result.append("/" + segments.joined(separator: "//"))
        guard let last = segments.popLast() else { return result + ["/%2F", "/index"] }
        let prefix = segments.isEmpty ? "" : "/" + segments.joined(separator: "/")
        // An encoded slash in place of the last separator; at the root it follows the leading slash.
        let encodedSlash = prefix.isEmpty ? "/%2" : prefix + "%2"
        let first = last.unicodeScalars.first!
        let hex = String(first.value, radix: 16)
        let tail = String(last.dropFirst())
        result += [
            prefix + "/%" + hex + tail, prefix + "/%" + hex.uppercased() + tail, prefix + "/./" + last,
            prefix + "/zz/../" + last, encodedSlash + "F" + last, encodedSlash + "f" + last,
            prefix + "/" + last.prefix(1).uppercased() + tail, path.uppercased(),
        ]
        return result
    }

    static let methods = ["GET", "POST", "PUT", "DELETE", "PATCH"]

    /// The policy's own 404 for an undeclared path.
    static func isRouteNotFound(_ answer: RawHTTP.Answer) -> Bool {
        answer.status == 404 && answer.rest.contains("no such route")
    }

    @Test("each path spelling and method: 401 or 404 without the right token unless the route is public")
    func walk() async throws {
        let (_, app) = TestServer.make(TestServer.configuration(device: "loopback") { $0.token = Self.token })
        try await app.test(.live) { client in
            let port = try #require(client.port)
            var requests = 0
            for path in Set(RouteTable.all.map(\.path)).sorted() {
                let declared = RouteTable.all.filter { $0.path == path }
                for method in Self.methods {
                    let route = declared.first { $0.method.rawValue == method }
                    let isPublic = route.map { $0.access == .public } ?? declared.allSatisfy { $0.access == .public }
                    for spelling in Self.spellings(Self.concrete(path)) {
                        let none = try RawHTTP.send(port: port, method: method, target: spelling)
                        let wrong = try RawHTTP.send(port: port, method: method, target: spelling, headers: ["Authorization: Bearer nope"])
                        let right = try RawHTTP.send(
                            port: port, method: method, target: spelling, headers: ["Authorization: Bearer \(Self.token)"])
                        requests += 3
                        let what = "\(method) \(spelling) (declared \(method) \(path))"
                        if isPublic {
                            #expect(none.status != 401, "\(what): a public route needs no token")
                            #expect(none.status == right.status, "\(what): the token changes nothing on a public route")
                            continue
                        }
                        #expect([401, 404].contains(none.status), "\(what) without a token: \(none.status)")
                        #expect([401, 404].contains(wrong.status), "\(what) with a wrong token: \(wrong.status)")
                        if Self.isRouteNotFound(none) {
                            // A spelling that resolves to no route does not resolve with the token either.
                            #expect(Self.isRouteNotFound(right), "\(what): 404 without the token but \(right.status) with it")
                        } else {
                            #expect(right.status != 401 && !Self.isRouteNotFound(right), "\(what) with the token: \(right.status)")
                        }
                    }
                    // The plain spelling reaches its route with the token: the walk is not vacuous.
                    if let route, route.access == .token {
                        let right = try RawHTTP.send(
                            port: port, method: method, target: Self.concrete(path),
                            headers: ["Authorization: Bearer \(Self.token)"])
                        #expect(right.status != 401 && !Self.isRouteNotFound(right), "\(route) with the token: \(right.status)")
                    }
                }
            }
            #expect(requests > 2000)
        }
    }

    @Test("WebSocket upgrades in every spelling: 401 or 404 without the token, 101 only with it")
    func upgrades() async throws {
        let (_, app) = TestServer.make(TestServer.configuration(device: "loopback") { $0.token = Self.token })
        try await app.test(.live) { client in
            let port = try #require(client.port)
            for route in RouteTable.all where route.webSocket {
                var upgraded = 0
                for spelling in Self.spellings(route.path) {
                    let none = try RawHTTP.send(port: port, method: "GET", target: spelling, headers: Curl.upgrade + ["Connection: Upgrade"])
                    #expect([401, 404].contains(none.status), "upgrade \(spelling) without a token: \(none.status)")
                    let query = try RawHTTP.send(
                        port: port, method: "GET", target: spelling + "?token=nope", headers: Curl.upgrade + ["Connection: Upgrade"])
                    #expect([401, 404].contains(query.status), "upgrade \(spelling) with a wrong token: \(query.status)")
                    let right = try RawHTTP.send(
                        port: port, method: "GET", target: spelling + "?token=\(Self.token)", headers: Curl.upgrade + ["Connection: Upgrade"])
                    #expect([101, 404].contains(right.status), "upgrade \(spelling) with the token: \(right.status)")
                    if right.status == 101 { upgraded += 1 }
                }
                #expect(upgraded > 5, "\(route): the upgrade works in the spellings the router resolves")
            }
        }
    }

    @Test("the router serves exactly the declared routes")
    func routerMatchesDeclarations() {
        let (server, _) = TestServer.make(TestServer.configuration(device: "loopback"))
        let router = server.makeRouter()
        // The router spells parameters `:name` or `{name}`; compare segments with parameters blanked.
        func shape(_ method: String, _ path: String) -> String {
            let segments = path.split(separator: "/").map { $0.hasPrefix(":") || $0.hasPrefix("{") ? "{}" : String($0) }
            return method + " /" + segments.joined(separator: "/")
        }
        let registered = Set(router.routes.map { shape($0.method.rawValue, $0.path.description) })
        let declared = Set(RouteTable.all.map { shape($0.method.rawValue, $0.path) })
        #expect(registered == declared)
    }

    @Test("openapi.yaml documents exactly the declared routes, with the same public ones")
    func documentMatchesDeclarations() throws {
        let text = try String(contentsOf: OpenAPIDocumentTests.sourceURL, encoding: .utf8)
        var documented: [String: Bool] = [:]
        var path: String?
        var operation: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  /"), line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast())
                operation = nil
            } else if !line.hasPrefix(" "), !line.isEmpty {
                path = nil
            } else if let current = path, let method = ["get", "post", "put", "delete"].first(where: { line == "    \($0):" }) {
                operation = method.uppercased() + " " + current
                documented[operation!] = false
            } else if let operation, line == "      security: []" {
                documented[operation] = true
            }
        }
        let declared = Dictionary(uniqueKeysWithValues: RouteTable.all.map { ("\($0.method.rawValue) \($0.path)", $0.access == .public) })
        #expect(documented == declared)
    }
}
