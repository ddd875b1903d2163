import Hummingbird
import HummingbirdWebSocket

/// Sends WebSocket upgrade requests for `/v1/capture` to the WebSocket route and plain GETs on to
/// the HTTP stream, since both share one path and method.
struct CaptureUpgradeMiddleware: RouterMiddleware {
    typealias Context = AudioGateRequestContext

    let upgrade: WebSocketUpgradeMiddleware<AudioGateRequestContext>

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard Self.isWebSocketUpgrade(request) else { return try await next(request, context) }
        return try await upgrade.handle(request, context: context, next: next)
    }

    static func isWebSocketUpgrade(_ request: Request) -> Bool {
        request.headers[.upgrade]?.lowercased().contains("websocket") == true
    }
}
