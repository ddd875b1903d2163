import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// The request context of every route, HTTP and WebSocket alike.
public struct AudioGateRequestContext: RequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let webSocket: WebSocketHandlerReference<Self>
    /// The connection's NIO channel (capture routes shrink its socket send buffer).
    public let channel: any Channel

    public init(source: Source) {
        coreContext = .init(source: source)
        webSocket = .init()
        channel = source.channel
    }
}
