import AudioGateCore
import NIOCore
import NIOWebSocket

/// The `/v1/playback` socket's one read path: every message (whole or in fragments, PCM split
/// anywhere, base64 audio in text, compressed files, marks and clears) is decoded here, on the
/// event loop, and fed to the stream's ingest in order. Control frames go on to the socket's
/// reader (Hummingbird answers pings and the close), in their place in the conversation.
///
/// Back-pressure: while the stream's queue is above its high watermark (or a compressed file's
/// decoder is behind), the rest of the message waits and the socket is not read; the device
/// thread's pull that takes the queue below the low watermark schedules `resume` on this loop.
///
/// Everything here is confined to the channel's event loop (`preconditionInEventLoop` in debug).
final class PlaybackFrameHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// Where messages go, and what the socket waits on.
    struct Target: Sendable {
        let ingest: PlaybackIngest
        let listener: PlaybackListener
        /// `?format=mp3|ogg|flac|webm`: audio is pieces of a compressed file.
        let container: AudioContainer?
        let mixFormat: @Sendable () -> AudioFormat
        /// Largest message, fragments counted together; larger ones close the socket with 1009.
        let maxMessageBytes: Int
        /// Where a compressed file takes its decoder thread's place.
        let decoders: DecoderSlots
        /// Set once everything up to the client's close (or the connection's end) has been taken,
        /// a compressed file's last audio included.
        let done = OneShot<Void>()
    }

    /// What stops the handler from taking the next message.
    enum Wait {
        /// The stream is full: audio left of the current message waits for room.
        case room(ByteBuffer)
        /// The compressed file's decoder is behind: these bytes wait for room in its queue.
        case decoder(ByteBuffer)
        /// A compressed file is being finished; the message that ended it comes next.
        case fileEnd
    }

    var target: Target?
    var wait: Wait?
    /// Frames not yet taken, in arrival order.
    var held = CircularBuffer<WebSocketFrame>()
    var readPending = false
    /// The message whose fragments are arriving: its opcode and size so far.
    var message: (opcode: WebSocketOpcode, bytes: Int)?
    /// A text message's fragments so far.
    var text = ByteBuffer()
    var session: CompressedSession?
    /// The last mark was refused (the stream holds its most pending marks) and the client was told.
    var refusingMarks = false
    /// The current compressed file found every decoder busy: its audio is dropped up to the next
    /// mark or clear, which end it.
    var droppingFile = false
    var context: ChannelHandlerContext?
    /// Frames went on to the reader since the last read-complete: the reader's channel hands its
    /// buffer over only at a read-complete, so one must follow frames passed on outside a read.
    private var forwarded = false
    private var ended = false

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        session?.cancel()
        session = nil
        held.removeAll()
        wait = nil
        self.context = nil
        target?.done.fulfill(())
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard let target, wait == nil, held.isEmpty else { return held.append(frame) }
        // The steady path: nothing waits, so the frame is taken at once.
        take(frame, target: target, context: context)
        completeRead(context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        forwarded = false
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        ended = true
        if target != nil { drain(context: context) }
        completeRead(context: context)
        context.fireChannelInactive()
    }

    func read(context: ChannelHandlerContext) {
        if held.isEmpty, wait == nil {
            context.read()
        } else {
            readPending = true
        }
    }

    /// Starts taking messages for `target`, beginning with those held so far.
    func attach(_ target: Target) {
        guard self.target == nil else { return }
        // Never added behind the frame decoder (the upgrade did not complete): nothing will come.
        guard let context else {
            target.done.fulfill(())
            return
        }
        context.eventLoop.preconditionInEventLoop()
        self.target = target
        drain(context: context)
    }

    /// The reason to wait is gone (room in the stream or the decoder's queue, a file finished).
    func resume() {
        guard let context else { return }
        drain(context: context)
    }

    /// Takes held frames until one has to wait; then reads on when nothing is held.
    func drain(context: ChannelHandlerContext) {
        context.eventLoop.preconditionInEventLoop()
        guard let target else { return }
        if let waiting = wait {
            wait = nil
            guard resumeWaiting(waiting, target: target, context: context) else { return completeRead(context: context) }
        }
        while wait == nil, let frame = held.popFirst() {
            take(frame, target: target, context: context)
        }
        if wait == nil, held.isEmpty {
            if ended { finishConnection(target: target, context: context) }
            if readPending {
                readPending = false
                context.read()
            }
        }
        completeRead(context: context)
    }

    /// The connection ended (closed or the client's close passed on): ends a compressed file as
    /// the end of its input, then tells the socket everything was taken.
    private func finishConnection(target: Target, context: ChannelHandlerContext) {
        guard session == nil else {
            return endFile(target: target, context: context) { _ in target.done.fulfill(()) }
        }
        target.done.fulfill(())
    }

    func forward(_ frame: WebSocketFrame, context: ChannelHandlerContext) {
        forwarded = true
        context.fireChannelRead(wrapInboundOut(frame))
    }

    /// Ends a batch of frames passed on outside a read.
    func completeRead(context: ChannelHandlerContext) {
        guard forwarded else { return }
        forwarded = false
        context.fireChannelReadComplete()
    }

    /// Closes the socket with `code` (a message too large, a broken fragment sequence).
    func fail(_ code: WebSocketErrorCode, context: ChannelHandlerContext) {
        held.removeAll()
        wait = nil
        session?.cancel()
        session = nil
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)), promise: nil)
        context.close(promise: nil)
    }
}
