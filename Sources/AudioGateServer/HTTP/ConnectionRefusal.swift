import NIOCore

/// The whole pipeline of a connection past `--max-connections`: writes the 503 as soon as the
/// connection is active, without reading the request, and closes it.
///
/// The request's bytes are read and dropped until the client closes (or `lingerTime` passes):
/// closing a socket with unread input sends a reset, which can destroy the answer before the
/// client reads it. Under a flood, past `ConnectionLimit.maximumLingering` such connections, the
/// socket is closed right after the answer is written.
final class ConnectionRefusal: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// How long the refused client has to read the answer and close.
    static let lingerTime = TimeAmount.seconds(2)

    private let connections: ConnectionLimit
    private var answered = false

    init(connections: ConnectionLimit) {
        self.connections = connections
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { answer(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        answer(context: context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent { context.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func answer(context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        let channel = context.channel
        let lingers = connections.linger(channel)
        context.writeAndFlush(wrapOutboundOut(connections.refusal)).whenComplete { _ in
            channel.close(mode: lingers ? .output : .all, promise: nil)
        }
        if lingers { channel.eventLoop.scheduleTask(in: Self.lingerTime) { channel.close(promise: nil) } }
    }
}
