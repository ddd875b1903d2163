import NIOCore

/// Whether a connection's decoder holds part of an event (a header line without its newline, or a
/// header whose data or payload has not all arrived). Shared by the decoder and `WyomingIdleHandler`
/// of one channel; used on its event loop only.
final class WyomingPartialEvent {
    var isHeld = false
}

/// Closes a Wyoming connection whose peer sent part of an event and then nothing for `timeout`
/// while the server was reading: the Wyoming side of the HTTP idle timeout, which closes a request
/// trickled or left half sent. Sits at the head of the pipeline, before the decoder.
///
/// A peer quiet between whole events is not timed: a mic client only listens, and a satellite keeps
/// its snd connection open between answers. Nor is a peer the server has stopped reading (a snd
/// session waiting for room in a full playback queue holds back `read`): the clock runs only while
/// part of an event is held and a read is outstanding, and any bytes that arrive restart it.
final class WyomingIdleHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let timeout: TimeAmount
    private let partial: WyomingPartialEvent
    /// A read reached the socket and no bytes have come since.
    private var waiting = false
    private var timer: Scheduled<Void>?

    /// A handler closing the connection after `timeout` without progress on the event `partial` tells of.
    init(timeout: TimeAmount, partial: WyomingPartialEvent) {
        self.timeout = timeout
        self.partial = partial
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Progress: the clock starts again at the next read, if an event is still partial then.
        waiting = false
        stopTimer()
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        waiting = true
        context.read()
        update(context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTimer()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopTimer()
    }

    private func update(context: ChannelHandlerContext) {
        guard waiting, partial.isHeld else {
            stopTimer()
            return
        }
        guard timer == nil else { return }
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            timer = nil
            guard waiting, partial.isHeld, context.channel.isActive else { return }
            // The session ends with this error and logs it, as it does for a malformed event.
            context.fireErrorCaught(
                WyomingError(.idleTimeout, "part of an event, then nothing for \(Self.describe(timeout))"))
            context.close(promise: nil)
        }
    }

    /// "60 s", or "250 ms" for a timeout under a second.
    private static func describe(_ timeout: TimeAmount) -> String {
        let nanoseconds = timeout.nanoseconds
        return nanoseconds % 1_000_000_000 == 0 ? "\(nanoseconds / 1_000_000_000) s" : "\(nanoseconds / 1_000_000) ms"
    }

    private func stopTimer() {
        timer?.cancel()
        timer = nil
    }
}
