import NIOCore
import NIOWebSocket

/// Reads every frame a playback client sends through its mask and drops it; sends a text frame
/// back (the sender's closing mark, which it waits for) and closes on a close frame.
final class DropFrames: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// A sum of the unmasked bytes, so the read is not optimised away.
    private var sum: UInt8 = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        // Read through the mask without the copy `unmaskedData` makes; the server unmasks in place.
        if let key = frame.maskKey {
            frame.data.withUnsafeReadableBytes { bytes in
                for index in bytes.indices { sum &+= bytes[index] ^ key[index & 3] }
            }
        }
        switch frame.opcode {
        case .text:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }
}
