import AudioGateCore
import NIOCore
import NIOWebSocket

extension PlaybackFrameHandler {
    /// Takes one frame; sets `wait` when the rest of it (or what follows) has to wait.
    func take(_ frame: WebSocketFrame, target: Target, context: ChannelHandlerContext) {
        switch frame.opcode {
        case .ping, .pong:
            forward(frame, context: context)
        case .connectionClose:
            // The client's close ends a compressed file as the end of its input; the socket's reader
            // sees the close once that file has played into the stream.
            guard session == nil else {
                return endFile(target: target, context: context) { handler in
                    handler.forward(frame, context: context)
                    target.done.fulfill(())
                }
            }
            forward(frame, context: context)
            target.done.fulfill(())
        case .binary, .text, .continuation:
            guard !frame.rsv1, !frame.rsv2, !frame.rsv3 else { return fail(.protocolError, context: context) }
            data(frame, target: target, context: context)
        default:
            fail(.protocolError, context: context)
        }
    }

    /// A data frame: the start or the next piece of a message.
    private func data(_ frame: WebSocketFrame, target: Target, context: ChannelHandlerContext) {
        let opcode: WebSocketOpcode
        switch (frame.opcode, message) {
        case (.continuation, let current?):
            opcode = current.opcode
        case (.binary, nil), (.text, nil):
            opcode = frame.opcode
        default:
            // A continuation with no message started, or a new message inside one.
            return fail(.protocolError, context: context)
        }
        let size = (message?.bytes ?? 0) + frame.length
        guard size <= target.maxMessageBytes else { return fail(.messageTooLarge, context: context) }
        message = frame.fin ? nil : (opcode, size)
        let payload = frame.unmaskedPayload
        if opcode == .binary { return audio(payload, target: target, context: context) }
        text.writeImmutableBuffer(payload)
        guard frame.fin else { return }
        let string = text.readString(length: text.readableBytes) ?? ""
        text.clear()
        guard let decoded = target.listener.decode(string) else { return }
        switch decoded {
        case .audio(let bytes):
            audio(ByteBuffer(bytes: bytes), target: target, context: context)
        case .mark(let name):
            droppingFile = false
            guard session == nil else {
                return endFile(target: target, context: context) { handler in handler.placeMark(name, target: target) }
            }
            placeMark(name, target: target)
        case .clear(let id):
            droppingFile = false
            session?.cancel()
            session = nil
            target.ingest.stream.clear(id: id)
            target.ingest.reset()
        case .pause:
            target.ingest.stream.setPaused(true)
        case .resume:
            target.ingest.stream.setPaused(false)
        }
    }

    /// Places a client's mark. A refused one (the stream holds its most pending marks) is dropped;
    /// the client is told once per run of refusals, so a flood of marks is not answered by a
    /// flood of errors that would crowd out the marks still owed to it.
    private func placeMark(_ name: String, target: Target) {
        if target.ingest.mark(name, listener: target.listener) {
            refusingMarks = false
            return
        }
        guard !refusingMarks else { return }
        refusingMarks = true
        let limit = target.ingest.stream.maxPendingMarks
        target.listener.send(
            .error(
                code: PlaybackError.Code.tooManyMarks.rawValue,
                message: "\(limit) marks are waiting to be heard on this stream; this mark and the next ones are dropped until one is heard"))
    }

    /// Audio bytes: PCM into the ingest, or a compressed file's bytes into its decoder's queue.
    private func audio(_ bytes: ByteBuffer, target: Target, context: ChannelHandlerContext) {
        guard bytes.readableBytes > 0 else { return }
        if let container = target.container {
            if let session { return compressed(bytes, session: session, target: target, context: context) }
            guard !droppingFile else { return }
            guard let slot = target.decoders.reserve() else {
                droppingFile = true
                let refusal = target.decoders.refusal
                target.listener.send(.error(code: refusal.code.rawValue, message: refusal.message + "; this file is dropped"))
                return
            }
            let session = CompressedSession(
                container: container, stream: target.ingest.stream, mixFormat: target.mixFormat, slot: slot)
            self.session = session
            return compressed(bytes, session: session, target: target, context: context)
        }
        pcm(bytes, target: target, context: context)
    }

    private func pcm(_ bytes: ByteBuffer, target: Target, context: ChannelHandlerContext) {
        var bytes = bytes
        // One slice (half a second) per pass: a long message does not hold the loop's other sockets.
        let offer = bytes.withUnsafeReadableBytes { target.ingest.offer($0, slices: 1) }
        // A live sender's ingest goes on after a clear: only `consumed` comes back.
        guard case .consumed(let count) = offer, count < bytes.readableBytes else { return }
        bytes.moveReaderIndex(forwardBy: count)
        wait = .room(bytes)
        let loop = NIOLoopBound(self, eventLoop: context.eventLoop)
        // Taken a slice: the rest goes on after what else the loop has to do. Full: wait for room.
        let registered = count > 0 ? nil : target.ingest.stream.whenRoom {
            loop.eventLoop.execute { loop.value.resume() }
        }
        // Room came while registering, or a slice was taken: go on from the loop, after this frame.
        if registered == nil { context.eventLoop.execute { loop.value.resume() } }
    }

    private func compressed(_ bytes: ByteBuffer, session: CompressedSession, target: Target, context: ChannelHandlerContext) {
        if session.queue.isReaderGone {
            // The decoder gave up on this file; its error goes out and the next audio starts a new one.
            return endFile(target: target, context: context) { _ in }
        }
        guard !session.queue.offer(bytes.readableBytesView) else { return }
        wait = .decoder(bytes)
        let loop = NIOLoopBound(self, eventLoop: context.eventLoop)
        let registered = session.queue.whenRoom {
            loop.eventLoop.execute { loop.value.resume() }
        }
        if registered == nil { context.eventLoop.execute { loop.value.resume() } }
    }

    /// Goes on with what waited; false when it has to wait again.
    func resumeWaiting(_ waiting: Wait, target: Target, context: ChannelHandlerContext) -> Bool {
        switch waiting {
        case .room(let bytes):
            pcm(bytes, target: target, context: context)
        case .decoder(let bytes):
            if let session {
                compressed(bytes, session: session, target: target, context: context)
            }
        case .fileEnd:
            // Only `endFile`'s completion clears this wait.
            wait = .fileEnd
        }
        return wait == nil
    }

    /// Ends the current compressed file: waits, without reading, until its decoder has queued it
    /// all, sends its error if decoding stopped early, then runs `then` and goes on.
    func endFile(target: Target, context: ChannelHandlerContext, then: @escaping (PlaybackFrameHandler) -> Void) {
        guard let session else { return then(self) }
        self.session = nil
        session.finish()
        wait = .fileEnd
        let loop = NIOLoopBound((handler: self, then: then), eventLoop: context.eventLoop)
        Task {
            let outcome = await session.outcome.waitIgnoringCancellation()
            loop.eventLoop.execute {
                let (handler, then) = loop.value
                if let event = session.errorEvent(outcome) { target.listener.send(event) }
                handler.wait = nil
                then(handler)
                handler.resume()
            }
        }
    }
}
