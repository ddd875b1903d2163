import Hummingbird
import HummingbirdWebSocket

extension AudioGateServer {
    /// `POST/DELETE /v1/playback`, `GET/PUT /v1/volume` and the `/v1/playback` WebSocket.
    func addPlaybackRoutes(to router: Router<AudioGateRequestContext>) {}
}
