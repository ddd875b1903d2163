import HTTPTypes

/// Every route of the API, declared once. Anything not declared here is a 404 before any handler
/// runs, and anything not declared `.public` needs the token: deny by default.
enum RouteTable {
    static let page = Route(.get, "/", .public)
    static let health = Route(.get, "/healthz", .public)
    static let document = Route(.get, "/openapi.yaml", .public)
    // The module is public code, like the page: a `<script type="module">` cannot send a header,
    // and its calls carry the token themselves. Origin and Host are still checked.
    static let browserModule = Route(.get, "/v1/audiogate.js", .public)
    static let metrics = Route(.get, "/metrics")
    static let info = Route(.get, "/v1/info")
    static let devices = Route(.get, "/v1/devices")
    static let status = Route(.get, "/v1/status")
    // A route's parameters are its parser's own key list, so the check and the parser cannot differ.
    static let capture = Route(.get, "/v1/capture", parameters: CaptureParameters.queryKeys, webSocket: true)
    // `wait` answers a POST: the WebSocket has its own `mark` for that.
    static let playbackSocket = Route(
        .get, "/v1/playback", parameters: PlaybackParameters.queryKeys.filter { $0 != "wait" }, webSocket: true)
    static let playback = Route(.post, "/v1/playback", parameters: PlaybackParameters.queryKeys)
    static let flush = Route(.delete, "/v1/playback", parameters: ["stream"])
    static let volume = Route(.get, "/v1/volume")
    static let setVolume = Route(.put, "/v1/volume")
    static let say = Route(.post, "/v1/say", parameters: SpeechRequest.queryKeys)
    static let voices = Route(.get, "/v1/voices")
    static let startRecording = Route(.post, "/v1/recordings")
    static let recordings = Route(.get, "/v1/recordings")
    static let recording = Route(.get, "/v1/recordings/{id}")
    static let deleteRecording = Route(.delete, "/v1/recordings/{id}")
    static let stopRecording = Route(.post, "/v1/recordings/{id}/stop")
    static let segment = Route(.get, "/v1/recordings/{id}/segments/{segment}")
    static let recordingAudio = Route(.get, "/v1/recordings/{id}/{file}")
    static let sendspinCommand = Route(.post, "/v1/sendspin/command")
    static let sendspinPairing = Route(.post, "/v1/sendspin/pairing")

    static let all: [Route] = [
        page, health, document, browserModule, metrics, info, devices, status, capture, playbackSocket, playback, flush,
        volume, setVolume, say, voices, recordings, startRecording, recording, deleteRecording, stopRecording, segment,
        recordingAudio, sendspinCommand, sendspinPairing,
    ]

    /// The routes declared on the path that a canonical path (`RoutePath`) resolves to, one per
    /// method; empty when no declared path matches. A literal segment wins over a `{name}`, as in
    /// the router.
    static func routes(at canonicalPath: String) -> [Route] {
        let segments = RoutePath.segments(canonicalPath)
        let matching = all.filter { $0.matches(segments) }
        guard let best = matching.min(by: { $0.wildcards < $1.wildcards }) else { return [] }
        return matching.filter { $0.path == best.path }
    }

    /// The route for `method` at a canonical path, if declared.
    static func route(_ method: HTTPRequest.Method, at canonicalPath: String) -> Route? {
        routes(at: canonicalPath).first { $0.method == method }
    }

    /// A 400 naming the first query parameter `method` on `path` does not take, if any. Undeclared
    /// paths and methods are left to the router (404, 405).
    static func unknownParameter(_ path: String, method: HTTPRequest.Method, keys: some Sequence<String>) -> APIError? {
        guard let route = route(method, at: RoutePath.canonical(path)) else { return nil }
        guard let unknown = keys.first(where: { $0 != "token" && !route.parameters.contains($0) }) else { return nil }
        let allowed = route.parameters.isEmpty ? "this route takes none" : "this route takes " + route.parameters.sorted().joined(separator: ", ")
        return APIError(.badParameter, "unknown parameter '\(unknown.prefix(64))': \(allowed)")
    }

    /// The `Allow` header value when `path` is declared but `method` is not one of its methods.
    static func allow(_ path: String, method: HTTPRequest.Method) -> String? {
        let declared = routes(at: RoutePath.canonical(path))
        guard !declared.isEmpty, !declared.contains(where: { $0.method == method }) else { return nil }
        return declared.map(\.method.rawValue).joined(separator: ", ")
    }
}
