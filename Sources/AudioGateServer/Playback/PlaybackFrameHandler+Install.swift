import NIOCore
import NIOHTTP1
import NIOWebSocket

extension PlaybackFrameHandler {
    /// Puts a new handler right after the WebSocket frame decoder once `channel`'s upgrade completes,
    /// before the first frame is decoded; call while the upgrade is being decided, on the event loop.
    ///
    /// Returns the handler, bound to the event loop, for `PlaybackSocket` to attach; nil when the
    /// pipeline cannot take it (the socket is then not upgraded).
    static func install(on channel: any Channel) -> NIOLoopBound<PlaybackFrameHandler>? {
        let handler = PlaybackFrameHandler()
        do {
            try channel.pipeline.syncOperations.addHandler(Installer(handler))
        } catch {
            return nil
        }
        return NIOLoopBound(handler, eventLoop: channel.eventLoop)
    }

    /// Waits in the HTTP pipeline for the upgrade: the frame decoder exists only after it, and the
    /// upgrade handler replays the bytes that followed the request only after announcing it.
    final class Installer: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = NIOAny
        let handler: PlaybackFrameHandler

        init(_ handler: PlaybackFrameHandler) {
            self.handler = handler
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .upgradeComplete = event as? HTTPServerUpgradeEvents {
                let pipeline = context.pipeline.syncOperations
                if let decoder = try? pipeline.handler(type: ByteToMessageHandler<WebSocketFrameDecoder>.self) {
                    try? pipeline.addHandler(handler, position: .after(decoder))
                }
                context.fireUserInboundEventTriggered(event)
                pipeline.removeHandler(context: context, promise: nil)
                return
            }
            context.fireUserInboundEventTriggered(event)
        }
    }
}
