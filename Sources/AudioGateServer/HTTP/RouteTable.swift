import HTTPTypes

/// The API's paths and their methods, so a known path with the wrong method is a 405, not a 404.
enum RouteTable {
    static let methods: [String: [HTTPRequest.Method]] = [
        "/": [.get],
        "/healthz": [.get],
        "/openapi.yaml": [.get],
        "/metrics": [.get],
        "/v1/info": [.get],
        "/v1/audiogate.js": [.get],
        "/v1/devices": [.get],
        "/v1/status": [.get],
        "/v1/capture": [.get],
        "/v1/playback": [.get, .post, .delete],
        "/v1/volume": [.get, .put],
        "/v1/say": [.post],
        "/v1/voices": [.get],
        "/v1/recordings": [.get, .post],
        "/v1/recordings/*": [.get, .delete],
        "/v1/recordings/*/stop": [.post],
        "/v1/recordings/*/segments/*": [.get],
        "/v1/recordings/*/*": [.get],
    ]

    /// The query parameters a route takes besides `token` (which every route takes); a route and
    /// method not listed take none. `GET` of `/v1/capture` and `/v1/playback` covers the WebSockets.
    static let parameters: [String: [HTTPRequest.Method: Set<String>]] = [
        "/v1/capture": [
            .get: [
                "rate", "channels", "format", "container", "seconds", "chunk_ms", "encoding", "levels", "aec", "ns",
                "agc", "vad", "codec", "bitrate",
            ]
        ],
        "/v1/playback": [
            .get: ["rate", "channels", "format", "stream", "role"],
            .post: ["rate", "channels", "format", "stream", "wait", "role"],
            .delete: ["stream"],
        ],
        "/v1/say": [.post: ["stream", "wait"]],
    ]

    /// A 400 naming the first query parameter `method` on `path` does not take, if any. Unknown
    /// paths and methods are left to the router (404, 405).
    static func unknownParameter(_ path: String, method: HTTPRequest.Method, keys: some Sequence<String>) -> APIError? {
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        guard let key = methods[trimmed] != nil ? trimmed : pattern(matching: trimmed),
            methods[key]?.contains(method) == true
        else { return nil }
        let taken = parameters[key]?[method] ?? []
        guard let unknown = keys.first(where: { $0 != "token" && !taken.contains($0) }) else { return nil }
        let allowed = taken.isEmpty ? "this route takes none" : "this route takes " + taken.sorted().joined(separator: ", ")
        return APIError(.badParameter, "unknown parameter '\(unknown.prefix(64))': \(allowed)")
    }

    /// The `Allow` header value when `path` is known but `method` is not one of its methods.
    static func allow(_ path: String, method: HTTPRequest.Method) -> String? {
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        guard let allowed = methods[trimmed] ?? pattern(matching: trimmed).flatMap({ methods[$0] }),
            !allowed.contains(method)
        else { return nil }
        return allowed.map(\.rawValue).joined(separator: ", ")
    }

    /// The table key with `*` segments that `path` matches, if any; the one with the fewest `*`
    /// when several do (`/v1/recordings/*/stop` before `/v1/recordings/*/*`).
    private static func pattern(matching path: String) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        let matching = methods.keys.filter { key in
            let keyParts = key.split(separator: "/", omittingEmptySubsequences: false)
            return key.contains("*") && keyParts.count == parts.count
                && zip(keyParts, parts).allSatisfy { $0 == "*" ? !$1.isEmpty : $0 == $1 }
        }
        return matching.min { $0.count { $0 == "*" } < $1.count { $0 == "*" } }
    }
}
