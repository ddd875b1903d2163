import Hummingbird

extension AudioGateServer {
    /// `GET /v1/capture` (HTTP stream); the `/v1/capture` WebSocket is served by `webSocketUpgrade`.
    ///
    /// WebSocket: `start`, then one chunk of exactly `chunk_ms` (rounded to whole frames) per
    /// message. With `encoding=json`, `seq` counts the chunks sent from 0 with no gaps, even after
    /// an `overrun`: dropped audio is reported by the `overrun` event (sent before the next chunk)
    /// and shows as a jump in `timestamp_ms`, the CLOCK_MONOTONIC capture time of the chunk's
    /// first sample. Bad parameters refuse the upgrade with a 400 JSON error.
    func addCaptureRoutes(to router: Router<AudioGateRequestContext>) {
        let hub = engine.captureHub
        let http = CaptureHTTPStream(hub: hub)
        router.group()
            .add(middleware: CaptureUpgradeMiddleware(hub: hub))
            .on(RouteTable.capture) { request, context in
                try http.response(request, context: context)
            }
    }
}
