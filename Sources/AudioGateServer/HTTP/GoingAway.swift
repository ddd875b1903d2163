import NIOCore
import NIOWebSocket

/// Sends a WebSocket close frame with 1001 (going away) to a connection that is a WebSocket.
///
/// On graceful shutdown the WebSocket library closes every socket with 1000 from a task it starts
/// in its own shutdown handler. Graceful-shutdown handlers run in the order they were registered,
/// so the connection registers this one before the library's (`AudioGateChannel.handle`): the
/// frame is queued on the event loop before the library's task exists, and 1001, the code that
/// tells clients the server is leaving (and to reconnect later), is on the wire first.
enum GoingAway {
    static func send(on channel: any Channel, reason: String = "server shutting down") {
        channel.eventLoop.execute {
            // Only an upgraded connection has a frame encoder; a plain HTTP one is left to finish.
            guard (try? channel.pipeline.syncOperations.handler(type: WebSocketFrameEncoder.self)) != nil else { return }
            var payload = channel.allocator.buffer(capacity: 2 + reason.utf8.count)
            payload.writeInteger(UInt16(1001))
            payload.writeString(reason)
            let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: payload)
            channel.writeAndFlush(frame, promise: nil)
        }
    }
}
