import HTTPTypes

/// One operation of the API, declared once in `RouteTable`: the router registers it, the security
/// policy decides its access from it, the query check and the WebSocket upgrade read it.
struct Route: Sendable, Hashable, CustomStringConvertible {
    /// Who may call a route.
    enum Access: Sendable, Hashable {
        /// Anyone who passes the Host and Origin checks.
        case `public`
        /// Also needs the bearer token when the server has one.
        case token
    }

    let method: HTTPRequest.Method
    /// The path as openapi.yaml spells it; `{name}` is one non-empty segment.
    let path: String
    let access: Access
    /// The query parameters the route takes besides `token`.
    let parameters: Set<String>
    /// True when a GET to this path may also upgrade to a WebSocket.
    let webSocket: Bool
    /// The path's segments, split once (every request is matched against every route); `nil` stands
    /// for a `{name}` segment.
    let segments: [Substring?]

    init(_ method: HTTPRequest.Method, _ path: String, _ access: Access = .token, parameters: [String] = [], webSocket: Bool = false) {
        self.method = method
        self.path = path
        self.access = access
        self.parameters = Set(parameters)
        self.webSocket = webSocket
        segments = path.split(separator: "/").map { $0.hasPrefix("{") && $0.hasSuffix("}") ? nil : $0 }
    }

    var description: String { "\(method.rawValue) \(path)" }

    /// True when the segments of a canonical path (see `RoutePath`) name this route's path.
    func matches(_ segments: [Substring]) -> Bool {
        self.segments.count == segments.count && zip(self.segments, segments).allSatisfy { $0 == nil || $0 == $1 }
    }

    /// How many `{name}` segments the path has: of two declarations that match, the one with fewer wins
    /// (`/v1/recordings/{id}/stop` before `/v1/recordings/{id}/{file}`), as in the router.
    var wildcards: Int { segments.count { $0 == nil } }
}
