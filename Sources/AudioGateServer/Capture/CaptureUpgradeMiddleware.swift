import Hummingbird

/// Answers a `/v1/capture` request that asks for a WebSocket but reached the HTTP routes (the
/// upgrader did not take it) as the upgrade would have been answered, without switching, instead
/// of starting an endless audio stream the client did not ask for.
struct CaptureUpgradeMiddleware: RouterMiddleware {
    typealias Context = AudioGateRequestContext

    let hub: CaptureHub

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard Self.isWebSocketUpgrade(request) else { return try await next(request, context) }
        _ = try CaptureParameters(request: request)
        try hub.checkCapacity()
        return Response(status: .ok)
    }

    static func isWebSocketUpgrade(_ request: Request) -> Bool {
        request.headers[.upgrade]?.lowercased().contains("websocket") == true
    }
}
