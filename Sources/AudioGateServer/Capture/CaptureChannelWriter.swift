import AudioGateCore
import CPrefetch
import NIOCore
import NIOWebSocket

/// Writes one capture WebSocket's events straight to its NIO channel, on the channel's event loop.
///
/// There is no task per client: the client's `CaptureDrain` calls `drain` once per device period
/// for every client of the event loop, and each socket gets its frames and one flush. A socket that
/// is not writable is left alone; its audio waits in the subscriber's bounded queue (oldest chunks
/// dropped beyond the bound, reported as `overrun`) and the next period tries again.
final class CaptureChannelWriter: Sendable {
    /// The client's connection.
    let channel: any Channel
    /// The batch of the channel's event loop.
    let drain: CaptureDrain
    private let json: Bool
    private let metrics: CaptureMetrics
    /// A buffer for the next drain: one a drain found no chunk for, or the last audio buffer the socket took.
    private let spare: NIOLoopBoundBox<ByteBuffer?>
    /// The context of the channel's WebSocket frame encoder, found when the writer starts: audio
    /// frames enter the pipeline there, already framed, instead of passing every handler above it
    /// and the encoder (a dynamic cast and a retain per handler, per frame, per client).
    ///
    /// Unchecked because it is touched only on the channel's event loop: `start` sets it there
    /// before the subscriber goes live, and only drains that run there after it read it (every
    /// method touching it asserts the event loop in debug builds). It is not in a
    /// `NIOLoopBoundBox` because that box is one more object per client to miss in cache on every
    /// send.
    nonisolated(unsafe) private var encoderContext: ChannelHandlerContext?
    /// Where the encoder's context and the channel's pipeline live, for `prefetchTargets`: plain
    /// addresses, because taking a reference to a cold object (a retain) waits for its cache line,
    /// which is what prefetching is to avoid. Prefetching an address never faults, and the objects
    /// live as long as the channel. Unchecked for the same reason as `encoderContext`: set once in
    /// `start`, on the event loop, read only there afterwards.
    nonisolated(unsafe) private var targetAddresses: (context: UnsafeRawPointer?, pipeline: UnsafeRawPointer?) = (nil, nil)
    /// Room left before each frame's payload for its header, so a frame goes out as one buffer
    /// (and one iovec) instead of two.
    static let headerRoom = 14

    init(channel: any Channel, drain: CaptureDrain, json: Bool, metrics: CaptureMetrics) {
        self.channel = channel
        self.drain = drain
        self.json = json
        self.metrics = metrics
        spare = .makeEmptyBox(valueType: ByteBuffer.self, eventLoop: channel.eventLoop)
    }

    /// Writes the start message, then whatever the subscriber queued meanwhile; on the event loop.
    func start(_ subscriber: CaptureSubscriber, message: String) {
        assertOnEventLoop()
        encoderContext = try? channel.pipeline.syncOperations.context(handlerType: WebSocketFrameEncoder.self)
        targetAddresses = (
            encoderContext.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) },
            UnsafeRawPointer(Unmanaged.passUnretained(channel.pipeline).toOpaque())
        )
        channel.write(text(message), promise: nil)
        if subscriber.goLive() {
            drain(subscriber)
            drain.recordSendDelays()
        } else {
            channel.flush()
        }
    }

    /// Writes every queued event while the socket takes more; on the event loop.
    func drain(_ subscriber: CaptureSubscriber) {
        assertOnEventLoop()
        guard channel.isWritable else {
            // Nothing is taken now; the next period's append hands the subscriber back.
            subscriber.drainStarted()
            return
        }
        if subscriber.sharesChunks {
            drainShared(subscriber)
            return
        }
        let chunkBytes = subscriber.chunkBytes
        let encoder = encoderContext
        var wrote = false
        var lastAudio: ByteBuffer?
        defer {
            if wrote { flush(from: encoder) }
            // A socket that took the frame has let go of its buffer by now: the next drain reuses it
            // instead of allocating (a buffer still queued in NIO is copied on write, never overwritten).
            if let lastAudio, spare.value == nil { spare.value = lastAudio }
        }
        var first = true
        var more = true
        while more, first || channel.isWritable {
            var buffer = spare.value ?? channel.allocator.buffer(capacity: chunkBytes + Self.headerRoom)
            spare.value = nil
            Self.clearLeavingHeaderRoom(&buffer)
            var taken: CaptureSubscriber.Event?? = nil
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: chunkBytes) { raw in
                (taken, more, _) = subscriber.takeForDrain(into: raw.bindMemory(to: UInt8.self), startingDrain: first)
                if case .chunk = taken { return chunkBytes }
                return 0
            }
            first = false
            guard case .some(.some(let event)) = taken else {
                spare.value = buffer
                return
            }
            wrote = true
            switch event {
            case .chunk(let seq, let timestamp, let ready):
                if json {
                    let message = buffer.withUnsafeReadableBytes { pcm in
                        AudioMessage.json(seq: seq, timestampMs: Double(timestamp) / 1e6, pcm: pcm)
                    }
                    buffer.clear()
                    spare.value = buffer
                    channel.write(text(message), promise: nil)
                } else if let encoder {
                    Self.prependBinaryFrameHeader(&buffer)
                    encoder.write(NIOAny(buffer), promise: nil)
                    lastAudio = buffer
                } else {
                    channel.write(WebSocketFrame(fin: true, opcode: .binary, data: buffer), promise: nil)
                }
                drain.noteSent(ready: ready)
            case .overrun, .device, .level, .voice, .music:
                spare.value = buffer
                writeMessage(event)
            }
        }
    }

    /// Writes a lane's chunk to a member's socket at once, if the socket takes it and nothing is
    /// queued before it; on the event loop. False: queue it instead.
    func writeDirect(_ chunk: SharedChunk, for subscriber: CaptureSubscriber) -> Bool {
        assertOnEventLoop()
        guard let encoder = encoderContext, channel.isWritable, subscriber.takeDirect() else { return false }
        encoder.writeAndFlush(NIOAny(chunk.frame), promise: nil)
        drain.noteSent(ready: chunk.ready)
        return true
    }

    /// Starts loading this writer's fields into the cache (see `CaptureDrain`'s prefetch).
    func prefetch() {
        audiogate_prefetch(Unmanaged.passUnretained(self).toOpaque(), 128)
    }

    /// Starts loading the channel, its pipeline and the encoder's context, which `writeDirect` goes
    /// through, into the cache.
    func prefetchTargets() {
        assertOnEventLoop()
        audiogate_prefetch(UnsafeRawPointer(bitPattern: UInt(bitPattern: ObjectIdentifier(channel))), 384)
        audiogate_prefetch(targetAddresses.context, 128)
        audiogate_prefetch(targetAddresses.pipeline, 128)
    }

    /// `drain` for a lane member: its chunks are already framed and shared, so nothing is copied
    /// or allocated; the buffer goes to the socket as it is.
    private func drainShared(_ subscriber: CaptureSubscriber) {
        let encoder = encoderContext
        var wrote = false
        defer { if wrote { flush(from: encoder) } }
        var first = true
        var more = true
        while more, first || channel.isWritable {
            let (taken, remaining, frame) = subscriber.takeForDrain(into: UnsafeMutableBufferPointer(start: nil, count: 0), startingDrain: first)
            more = remaining
            first = false
            guard case .some(.some(let event)) = taken else { return }
            wrote = true
            if case .chunk(_, _, let ready) = event, let frame {
                if let encoder {
                    encoder.write(NIOAny(frame), promise: nil)
                } else {
                    var payload = frame
                    payload.moveReaderIndex(forwardBy: Self.frameHeaderLength(frame))
                    channel.write(WebSocketFrame(fin: true, opcode: .binary, data: payload), promise: nil)
                }
                drain.noteSent(ready: ready)
            } else {
                writeMessage(event)
            }
        }
    }

    /// Flushes from the encoder down, like the audio: everything above it was written synchronously.
    private func flush(from encoder: ChannelHandlerContext?) {
        if let encoder { encoder.flush() } else { channel.flush() }
    }

    /// Writes an event other than audio as its JSON text message.
    private func writeMessage(_ event: CaptureSubscriber.Event) {
        switch event {
        case .chunk:
            break
        case .overrun(let milliseconds):
            metrics.recordDropped(milliseconds: milliseconds)
            channel.write(text(OverrunMessage(droppedMs: milliseconds).json()), promise: nil)
        case .device(let state):
            channel.write(text(DeviceMessage(state: state).json()), promise: nil)
        case .level(let rms, let peak):
            channel.write(text(LevelMessage(rmsDBFS: rms, peakDBFS: peak).json()), promise: nil)
        case .music(let json):
            channel.write(text(json), promise: nil)
        case .voice(let speech, let timestamp):
            let state: VoiceActivityMessage.State = speech ? .speech : .silence
            channel.write(
                text(VoiceActivityMessage(state: state, timestampMs: Double(timestamp) / 1e6).json()), promise: nil)
        }
    }

    /// The length of the binary frame header at the start of `frame`'s readable bytes.
    static func frameHeaderLength(_ frame: ByteBuffer) -> Int {
        switch frame.getInteger(at: frame.readerIndex + 1, as: UInt8.self) {
        case 126: 4
        case 127: 10
        default: 2
        }
    }

    private func text(_ string: String) -> WebSocketFrame {
        var buffer = channel.allocator.buffer(capacity: string.utf8.count + Self.headerRoom)
        Self.clearLeavingHeaderRoom(&buffer)
        buffer.writeString(string)
        return WebSocketFrame(fin: true, opcode: .text, data: buffer)
    }

    /// Writes an unmasked, final binary frame's header (RFC 6455 5.2) into the room before the payload.
    static func prependBinaryFrameHeader(_ buffer: inout ByteBuffer) {
        let length = buffer.readableBytes
        let start: Int
        switch length {
        case ..<126:
            start = buffer.readerIndex - 2
            buffer.setInteger(UInt8(length), at: start + 1)
        case ...0xFFFF:
            start = buffer.readerIndex - 4
            buffer.setInteger(UInt8(126), at: start + 1)
            buffer.setInteger(UInt16(length), at: start + 2)
        default:
            start = buffer.readerIndex - 10
            buffer.setInteger(UInt8(127), at: start + 1)
            buffer.setInteger(UInt64(length), at: start + 2)
        }
        buffer.setInteger(UInt8(0x82), at: start)
        buffer.moveReaderIndex(to: start)
    }

    /// Empties `buffer` and starts its payload `headerRoom` bytes in.
    private static func clearLeavingHeaderRoom(_ buffer: inout ByteBuffer) {
        buffer.clear()
        buffer.moveWriterIndex(forwardBy: headerRoom)
        buffer.moveReaderIndex(forwardBy: headerRoom)
    }

    /// Debug builds check that the caller runs on the channel's event loop; release builds do not
    /// even read the channel's event loop (an `assert` condition is not evaluated there).
    @inline(__always)
    private func assertOnEventLoop() {
        assert(channel.eventLoop.inEventLoop, "CaptureChannelWriter used off its channel's event loop")
    }
}
