import AudioGateCore
import NIOCore
import NIOWebSocket

/// The `/v1/playback` socket's steady path: takes whole-frame PCM messages, marks and clears on the
/// event loop as they are decoded, so a chunk reaches its stream without a task switch.
///
/// It sits between the frame decoder and the socket's async reader (`PlaybackSocket`), which still
/// handles everything else. Control frames pass through. The first message this path does not
/// take as it is (a fragment, a piece of a frame, more than one slice, extension bits) is passed on
/// with everything after it, for good: the reader then sees the rest of the conversation in order.
///
/// Until `attach` names the stream, messages are held and reading stops; while the stream's queue
/// is above its limit, messages are held, reading stops, and the queue is checked every 20 ms, as
/// the reader's own wait does.
final class PlaybackFrameHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// Where taken messages go.
    struct Target: Sendable {
        let stream: PlaybackStream
        let listener: PlaybackListener
        let format: AudioFormat
        let mixFormat: @Sendable () -> AudioFormat
    }

    enum Mode {
        /// Installed, the socket's reader not yet running.
        case waiting
        case taking(Target)
        /// Everything goes to the reader.
        case passing
    }

    /// What became of one message.
    private enum Outcome {
        case taken
        case full
        case notMine
    }

    private var mode = Mode.waiting
    private var held = CircularBuffer<WebSocketFrame>()
    private var readPending = false
    /// Messages went on since the last read-complete: the reader's channel hands its buffer over
    /// only at a read-complete, so one must follow messages passed on outside a read.
    private var forwarded = false
    private var recheck: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        recheck?.cancel()
        recheck = nil
        held.removeAll()
        mode = .passing
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch mode {
        case .passing:
            forward(frame, context: context)
        case .waiting:
            held.append(frame)
        case .taking(let target):
            guard held.isEmpty else { return held.append(frame) }
            switch take(frame, target: target, context: context) {
            case .taken:
                break
            case .full:
                held.append(frame)
                scheduleRecheck(context: context)
            case .notMine:
                held.append(frame)
                pass(context: context)
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        forwarded = false
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        // The reader must still see the close, after everything that came before it.
        pass(context: context)
        completeRead(context: context)
        context.fireChannelInactive()
    }

    func read(context: ChannelHandlerContext) {
        if held.isEmpty || mode.isPassing {
            context.read()
        } else {
            readPending = true
        }
    }

    /// Starts taking messages for `target`, beginning with those held so far; on the event loop.
    func attach(_ target: Target) {
        guard let context, case .waiting = mode else { return }
        mode = .taking(target)
        drain(context: context)
        completeRead(context: context)
    }

    /// Stops taking messages (the socket's reader is done with the stream); on the event loop.
    func detach() {
        guard let context else { return }
        pass(context: context)
        completeRead(context: context)
    }

    private func drain(context: ChannelHandlerContext) {
        guard case .taking(let target) = mode else { return }
        while let frame = held.first {
            switch take(frame, target: target, context: context) {
            case .taken:
                held.removeFirst()
            case .full:
                scheduleRecheck(context: context)
                return
            case .notMine:
                return pass(context: context)
            }
        }
        if readPending {
            readPending = false
            context.read()
        }
    }

    /// Takes one message (a control frame goes on to the reader), or says it is the reader's.
    private func take(_ frame: WebSocketFrame, target: Target, context: ChannelHandlerContext) -> Outcome {
        switch frame.opcode {
        case .ping, .pong, .connectionClose:
            forward(frame, context: context)
            return .taken
        case .binary, .text:
            guard frame.fin, !frame.rsv1, !frame.rsv2, !frame.rsv3 else { return .notMine }
        default:
            return .notMine
        }
        if frame.opcode == .text {
            var bytes = frame.unmaskedPayload
            guard let message = target.listener.decode(bytes.readString(length: bytes.readableBytes) ?? "") else {
                return .taken
            }
            switch message {
            case .mark(let name):
                target.stream.addMark(name, listener: target.listener)
                return .taken
            case .clear:
                target.stream.clear()
                return .taken
            case .audio(let data):
                return data.withUnsafeBytes { queue($0, target: target) }
            }
        }
        let data = frame.unmaskedPayload
        return data.withUnsafeReadableBytes { queue($0, target: target) }
    }

    private func queue(_ bytes: UnsafeRawBufferPointer, target: Target) -> Outcome {
        let bytesPerFrame = target.format.bytesPerFrame
        // The reader carries partial frames over and waits between the slices of a long message.
        guard bytes.count % bytesPerFrame == 0, bytes.count / bytesPerFrame <= PlaybackStream.sliceFrames(target.format)
        else { return .notMine }
        guard target.stream.hasRoom else { return .full }
        target.stream.enqueueNow(bytes, format: target.format, mixFormat: target.mixFormat)
        return .taken
    }

    /// Hands everything held to the reader, and passes all later messages on.
    private func pass(context: ChannelHandlerContext) {
        guard !mode.isPassing else { return }
        mode = .passing
        recheck?.cancel()
        recheck = nil
        while let frame = held.popFirst() { forward(frame, context: context) }
        if readPending {
            readPending = false
            context.read()
        }
    }

    private func scheduleRecheck(context: ChannelHandlerContext) {
        guard recheck == nil else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        recheck = context.eventLoop.scheduleTask(in: .milliseconds(20)) {
            let handler = loopBound.value
            handler.recheck = nil
            guard let context = handler.context else { return }
            handler.drain(context: context)
            handler.completeRead(context: context)
        }
    }

    private func forward(_ frame: WebSocketFrame, context: ChannelHandlerContext) {
        forwarded = true
        context.fireChannelRead(wrapInboundOut(frame))
    }

    /// Ends a batch of messages passed on outside a read.
    private func completeRead(context: ChannelHandlerContext) {
        guard forwarded else { return }
        forwarded = false
        context.fireChannelReadComplete()
    }
}

extension PlaybackFrameHandler.Mode {
    var isPassing: Bool {
        if case .passing = self { true } else { false }
    }
}
