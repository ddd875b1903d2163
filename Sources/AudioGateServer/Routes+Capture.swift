import Hummingbird
import HummingbirdWebSocket

extension AudioGateServer {
    /// `GET /v1/capture` (HTTP stream) and the `/v1/capture` WebSocket.
    func addCaptureRoutes(to router: Router<AudioGateRequestContext>) {}
}
