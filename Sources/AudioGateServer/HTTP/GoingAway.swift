import NIOCore
import NIOWebSocket

/// Sends a WebSocket close frame with 1001 (going away) straight to the connection.
///
/// On graceful shutdown the WebSocket library closes every socket with 1000 from a task of its
/// own; writing our frame synchronously from the shutdown handler puts 1001, the code that tells
/// clients the server is leaving (and to reconnect later), on the wire first.
enum GoingAway {
    static func send(on channel: any Channel, reason: String = "server shutting down") {
        var payload = channel.allocator.buffer(capacity: 2 + reason.utf8.count)
        payload.writeInteger(UInt16(1001))
        payload.writeString(reason)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: payload)
        channel.writeAndFlush(frame, promise: nil)
    }
}
