import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle

extension AudioGateServer {
    /// What the upgrader runs for a WebSocket request that passed the `UpgradeGuard`.
    typealias WebSocketUpgrade = @Sendable (HTTPRequest, any Channel, Logger) throws -> ShouldUpgradeResult<
        WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>
    >

    /// The `/v1/capture` and `/v1/playback` WebSockets, chosen by path when the upgrade request arrives.
    ///
    /// Upgrades deliberately bypass the router: HummingbirdWebSocket's router upgrade stores the
    /// request context inside the context's own `WebSocketHandlerReference`, a reference cycle that
    /// is never broken, so every connection kept its context, logger and NIO channel forever.
    /// Everything a handler needs is taken from the request head and the channel here instead.
    func webSocketUpgrade(check: @escaping UpgradeGuard.Check) -> WebSocketUpgrade {
        let hub = engine.captureHub
        let mixer = engine.mixer
        let maxMessageBytes = configuration.limits.maxWebSocketMessageBytes
        let capture = CaptureWebSocket(hub: hub)
        return { head, channel, logger in
            let (path, query) = UpgradeGuard.split(head.path ?? "/")
            // The guard in front of the upgrader already refused everything else; checked again so
            // no other pipeline can open a socket the HTTP routes would refuse.
            if check(.get, path, query, head.authority, head.headerFields) != nil {
                return .dontUpgrade
            }
            let dictionary = URI("?" + (query ?? "")).queryDictionary
            // What the security middleware adds to any answer, the 101 included.
            var headers: HTTPFields = [:]
            if let origin = head.headerFields[.origin] {
                headers[.accessControlAllowOrigin] = origin
                headers[.vary] = "Origin"
            }
            switch RouteTable.route(.get, at: RoutePath.canonical(path)) {
            case RouteTable.capture:
                guard let parameters = try? CaptureParameters(query: dictionary) else { return .dontUpgrade }
                return .upgrade(headers) { inbound, outbound, context in
                    try await capture.run(
                        parameters: parameters, channel: channel, inbound: inbound, outbound: outbound,
                        logger: context.logger)
                }
            case RouteTable.playbackSocket:
                guard let parameters = try? PlaybackParameters(query: dictionary) else { return .dontUpgrade }
                guard let frames = PlaybackFrameHandler.install(on: channel) else { return .dontUpgrade }
                return .upgrade(headers) { inbound, outbound, context in
                    try await PlaybackSocket(
                        mixer: mixer, parameters: parameters, maxMessageBytes: maxMessageBytes, frames: frames,
                        logger: context.logger
                    ).run(inbound: inbound, outbound: outbound)
                }
            default:
                return .dontUpgrade
            }
        }
    }
}
