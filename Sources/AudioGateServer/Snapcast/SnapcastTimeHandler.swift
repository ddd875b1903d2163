import AudioGateCore
import NIOCore

/// Keeps `SnapcastClock` up to date on the event loop, where the receive stamps are taken: once the
/// server has answered Hello, 50 Time requests back to back, then one a second, as snapclient does.
/// Time answers stop here; a request unanswered for 2 s closes the connection, and so does a server
/// that sends no ServerSettings within 5 s of connecting (nothing else would time it out).
final class SnapcastTimeHandler: ChannelDuplexHandler {
    typealias InboundIn = SnapcastMessage
    typealias InboundOut = SnapcastMessage
    typealias OutboundIn = SnapcastRequest
    typealias OutboundOut = SnapcastRequest

    /// Requests sent back to back after connecting.
    static let quickSyncs = 50
    static let interval = TimeAmount.seconds(1)
    static let quickInterval = TimeAmount.microseconds(100)
    static let timeout = TimeAmount.seconds(2)
    /// Longest wait for the first ServerSettings: snapserver sends them at once after Hello.
    static let settingsTimeout = TimeAmount.seconds(5)

    private let clock: SnapcastClock
    private var started = false
    private var quickLeft = SnapcastTimeHandler.quickSyncs
    private var nextID: UInt16 = 1
    private var awaiting: UInt16?
    private var timeoutTask: Scheduled<Void>?
    private var nextTask: Scheduled<Void>?

    init(clock: SnapcastClock) {
        self.clock = clock
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let message = unwrapInboundIn(data)
        switch message {
        case .time(let reply):
            guard reply.refersTo == awaiting else { return }
            awaiting = nil
            timeoutTask?.cancel()
            clock.add(diffMicroseconds: reply.diffMicroseconds, now: reply.receivedNanoseconds)
            let delay = quickLeft > 0 ? Self.quickInterval : Self.interval
            quickLeft = max(quickLeft - 1, 0)
            nextTask = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in request(context: context) }
        case .serverSettings where !started:
            started = true
            timeoutTask?.cancel()
            context.fireChannelRead(data)
            request(context: context)
        default:
            context.fireChannelRead(data)
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        timeoutTask = context.eventLoop.assumeIsolated().scheduleTask(in: Self.settingsTimeout) { [self] in
            guard !started else { return }
            context.fireErrorCaught(SnapcastError(.timeout, "no ServerSettings within 5 s of connecting"))
            context.close(promise: nil)
        }
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timeoutTask?.cancel()
        nextTask?.cancel()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timeoutTask?.cancel()
        nextTask?.cancel()
        context.fireChannelInactive()
    }

    private func request(context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        let id = nextID
        nextID = nextID == 9999 ? 1 : nextID + 1
        awaiting = id
        context.writeAndFlush(wrapOutboundOut(.time(id: id)), promise: nil)
        timeoutTask = context.eventLoop.assumeIsolated().scheduleTask(in: Self.timeout) {
            context.fireErrorCaught(SnapcastError(.timeout, "no answer to a Time request within 2 s"))
            context.close(promise: nil)
        }
    }
}
