import HTTPTypes

/// The API's paths and their methods, so a known path with the wrong method is a 405, not a 404.
enum RouteTable {
    static let methods: [String: [HTTPRequest.Method]] = [
        "/": [.get],
        "/healthz": [.get],
        "/openapi.yaml": [.get],
        "/metrics": [.get],
        "/v1/info": [.get],
        "/v1/devices": [.get],
        "/v1/status": [.get],
        "/v1/capture": [.get],
        "/v1/playback": [.get, .post, .delete],
        "/v1/volume": [.get, .put],
        "/v1/recordings": [.get, .post],
        "/v1/recordings/*": [.get, .delete],
        "/v1/recordings/*/stop": [.post],
        "/v1/recordings/*/segments/*": [.get],
    ]

    /// The `Allow` header value when `path` is known but `method` is not one of its methods.
    static func allow(_ path: String, method: HTTPRequest.Method) -> String? {
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        guard let allowed = methods[trimmed] ?? pattern(matching: trimmed).flatMap({ methods[$0] }),
            !allowed.contains(method)
        else { return nil }
        return allowed.map(\.rawValue).joined(separator: ", ")
    }

    /// The table key with `*` segments that `path` matches, if any.
    private static func pattern(matching path: String) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        return methods.keys.first { key in
            let keyParts = key.split(separator: "/", omittingEmptySubsequences: false)
            return key.contains("*") && keyParts.count == parts.count
                && zip(keyParts, parts).allSatisfy { $0 == "*" ? !$1.isEmpty : $0 == $1 }
        }
    }
}
