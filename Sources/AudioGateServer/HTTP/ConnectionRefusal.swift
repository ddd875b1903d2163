import NIOCore

/// The whole pipeline of a connection past `--max-connections`: writes the 503 as soon as the
/// connection is active, without reading the request, and closes it.
///
/// The request's bytes are read and dropped until the client closes (or `lingerTime` passes):
/// closing a socket with unread input sends a reset, which can destroy the answer before the
/// client reads it.
final class ConnectionRefusal: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// How long the refused client has to read the answer and close.
    static let lingerTime = TimeAmount.seconds(2)

    private let response: ByteBuffer
    private var answered = false

    init(response: ByteBuffer) {
        self.response = response
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
        context.writeAndFlush(wrapOutboundOut(response)).whenComplete { _ in
            channel.close(mode: .output, promise: nil)
        }
        channel.eventLoop.scheduleTask(in: Self.lingerTime) { channel.close(promise: nil) }
    }
}
