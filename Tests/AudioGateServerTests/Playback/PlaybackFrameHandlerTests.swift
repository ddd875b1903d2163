import AudioGateCore
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOWebSocket
import Testing

@testable import AudioGateServer

/// The one read path of `/v1/playback`: every message is decoded on the event loop and fed to the
/// stream in order; only control frames go on to the socket's reader.
@Suite("playback messages taken on the event loop")
struct PlaybackFrameHandlerTests {
    static let format = AudioFormat(rate: 24000, channels: 1, sampleFormat: .s16le)
    static let mix = AudioFormat(rate: 48000, channels: 2, sampleFormat: .f32le)

    /// Counts the reads that get past the handler to the socket.
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = NIOAny
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    /// Hands messages on only at a read-complete, as the socket reader's `NIOAsyncChannel` does.
    final class BatchingReader: ChannelInboundHandler {
        typealias InboundIn = WebSocketFrame
        var pending: [WebSocketFrame] = []
        var delivered: [WebSocketFrame] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            pending.append(unwrapInboundIn(data))
        }
        func channelReadComplete(context: ChannelHandlerContext) {
            delivered += pending
            pending.removeAll()
        }
    }

    struct Fixture {
        let channel = EmbeddedChannel()
        let handler = PlaybackFrameHandler()
        let counter = ReadCounter()
        let reader = BatchingReader()
        let stream: PlaybackStream
        let listener = PlaybackListener()
        let target: PlaybackFrameHandler.Target

        init(queueSeconds: Int = 60, maxMessageBytes: Int = 1 << 20, maxPendingMarks: Int = 256) throws {
            var configuration = ServerConfiguration()
            configuration.limits.playbackQueueSeconds = queueSeconds
            configuration.limits.maxPendingMarks = maxPendingMarks
            let mixer = PlaybackMixer(configuration: configuration, metrics: ServerMetrics(), logger: TestServer.logger)
            stream = try mixer.acquire("test")
            stream.addListener(listener)
            target = .init(
                ingest: PlaybackIngest(stream: stream, format: PlaybackFrameHandlerTests.format, mixFormat: { PlaybackFrameHandlerTests.mix }),
                listener: listener, container: nil, mixFormat: { PlaybackFrameHandlerTests.mix }, maxMessageBytes: maxMessageBytes,
                decoders: mixer.decoders)
            try channel.pipeline.syncOperations.addHandlers([counter, handler, reader])
        }

        func attach() {
            handler.attach(target)
        }

        /// Mix frames queued so far.
        var queued: Int { stream.queued.frames }

        /// Whether the queue holds `milliseconds` of 48 kHz audio, less what the resampler still holds.
        func holds(milliseconds: Int) -> Bool {
            let expected = milliseconds * 48
            return queued <= expected && queued >= expected - 100
        }

        /// What the socket's reader has been given so far.
        func forwarded() throws -> [WebSocketFrame] {
            defer { reader.delivered.removeAll() }
            return reader.delivered
        }

        /// Plays `milliseconds` of the queue, as the device thread does.
        func play(milliseconds: Int) {
            var scratch = [Float](repeating: 0, count: milliseconds * 48 * 2)
            _ = scratch.withUnsafeMutableBufferPointer {
                stream.render(into: $0, frames: milliseconds * 48, format: PlaybackFrameHandlerTests.mix, at: PlaybackPeriod(startFrame: 0))
            }
        }
    }

    /// `milliseconds` of client PCM (plus `extraBytes`), masked as a browser sends it.
    static func audio(milliseconds: Int, extraBytes: Int = 0, fin: Bool = true, opcode: WebSocketOpcode = .binary) -> WebSocketFrame {
        let key: WebSocketMaskingKey = [1, 2, 3, 4]
        var data = ByteBuffer(bytes: [UInt8](repeating: 0x10, count: milliseconds * 48 + extraBytes))
        data.webSocketMask(key)
        return WebSocketFrame(fin: fin, opcode: opcode, maskKey: key, data: data)
    }

    static func bytes(_ count: Int) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .binary, data: ByteBuffer(bytes: [UInt8](repeating: 0x10, count: count)))
    }

    static func text(_ text: String, fin: Bool = true, opcode: WebSocketOpcode = .text) -> WebSocketFrame {
        WebSocketFrame(fin: fin, opcode: opcode, data: ByteBuffer(string: text))
    }

    @Test("messages wait, and reading stops, until the stream is attached; then they are taken in order")
    func heldUntilAttached() throws {
        let fixture = try Fixture()
        fixture.channel.read()
        #expect(fixture.counter.reads == 1)
        try fixture.channel.writeInbound(Self.audio(milliseconds: 20))
        try fixture.channel.writeInbound(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer(string: "p")))
        try fixture.channel.writeInbound(Self.text(#"{"type":"mark","name":"m1"}"#))
        fixture.channel.read()
        #expect(fixture.counter.reads == 1, "a read while messages wait for the stream must be held back")
        #expect(try fixture.forwarded().isEmpty)
        #expect(fixture.queued == 0)

        fixture.attach()
        #expect(fixture.holds(milliseconds: 20), "\(fixture.queued) frames queued")
        #expect(fixture.stream.pendingMarks == ["m1"])
        #expect(try fixture.forwarded().map(\.opcode) == [.ping])
        #expect(fixture.counter.reads == 2)

        try fixture.channel.writeInbound(Self.audio(milliseconds: 40))
        #expect(fixture.holds(milliseconds: 60), "\(fixture.queued) frames queued")
        try fixture.channel.writeInbound(Self.text(#"{"type":"clear"}"#))
        #expect(fixture.queued == 0)
        #expect(try fixture.forwarded().isEmpty)
    }

    @Test("pause holds the stream (nothing plays, its queue and marks kept) until resume plays it on")
    func pauseAndResume() throws {
        let fixture = try Fixture()
        fixture.attach()
        try fixture.channel.writeInbound(Self.audio(milliseconds: 100))
        try fixture.channel.writeInbound(Self.text(#"{"type":"mark","name":"end"}"#))
        try fixture.channel.writeInbound(Self.text(#"{"type":"pause"}"#))
        #expect(fixture.stream.isPaused)
        fixture.play(milliseconds: 50)
        #expect(fixture.holds(milliseconds: 100), "\(fixture.queued) frames queued while paused")
        #expect(fixture.stream.pendingMarks == ["end"])
        try fixture.channel.writeInbound(Self.text(#"{"type":"resume"}"#))
        #expect(!fixture.stream.isPaused)
        fixture.play(milliseconds: 50)
        #expect(fixture.holds(milliseconds: 50), "\(fixture.queued) frames queued after resume")
        #expect(try fixture.forwarded().isEmpty)
    }

    @Test("marks past the stream's bound are dropped with one too_many_marks error per run; the socket goes on")
    func marksBounded() async throws {
        let fixture = try Fixture(maxPendingMarks: 4)
        fixture.attach()
        try fixture.channel.writeInbound(Self.audio(milliseconds: 100))
        for index in 0..<10_000 {
            try fixture.channel.writeInbound(Self.text(#"{"type":"mark","name":"m\#(index)"}"#))
        }
        #expect(fixture.stream.pendingMarks == ["m0", "m1", "m2", "m3"])
        // The next run of refusals, once a mark was accepted again, is told again.
        fixture.stream.clear()
        try fixture.channel.writeInbound(Self.text(#"{"type":"mark","name":"again"}"#))
        for index in 0..<10 {
            try fixture.channel.writeInbound(Self.text(#"{"type":"mark","name":"x\#(index)"}"#))
        }
        #expect(fixture.stream.pendingMarks == ["again", "x0", "x1", "x2"])
        try fixture.channel.writeInbound(Self.audio(milliseconds: 20))
        #expect(fixture.holds(milliseconds: 20), "audio is still taken: \(fixture.queued) frames queued")
        #expect(try fixture.channel.readOutbound(as: WebSocketFrame.self) == nil, "the socket stays open")
        fixture.stream.removeListener(fixture.listener)
        var errors: [String] = []
        for await event in fixture.listener.events {
            if case .error(let code, _) = event { errors.append(code) }
        }
        #expect(errors == ["too_many_marks", "too_many_marks"])
    }

    @Test("decoder slots: at most the limit at once; each is given back once, by release or when dropped")
    func decoderSlots() {
        let slots = DecoderSlots(limit: 2)
        let first = slots.reserve()
        var second = slots.reserve()
        #expect(first != nil && second != nil)
        #expect(slots.reserve() == nil, "a third is refused")
        #expect(slots.count == 2)
        first?.release()
        first?.release()
        #expect(slots.count == 1)
        second = nil
        #expect(slots.count == 0)
        #expect(slots.reserve() != nil)
    }

    @Test("the client's close goes on to the reader after everything before it was taken, and the socket is told")
    func closeAfterAudio() throws {
        let fixture = try Fixture()
        try fixture.channel.writeInbound(Self.audio(milliseconds: 20))
        try fixture.channel.writeInbound(WebSocketFrame(fin: true, opcode: .connectionClose, data: ByteBuffer()))
        #expect(try fixture.forwarded().isEmpty)
        #expect(fixture.target.done.value == nil)
        fixture.attach()
        #expect(fixture.holds(milliseconds: 20), "\(fixture.queued) frames queued")
        #expect(try fixture.forwarded().map(\.opcode) == [.connectionClose])
        #expect(fixture.target.done.value != nil)
    }

    @Test("partial frames are carried across messages, fragments and base64 text, in order")
    func partialFramesCarried() throws {
        let fixture = try Fixture()
        fixture.attach()
        // 480 samples and one odd byte, then the byte that completes the sample, in three shapes.
        try fixture.channel.writeInbound(Self.bytes(961))
        #expect(fixture.holds(milliseconds: 20), "\(fixture.queued) frames queued")
        try fixture.channel.writeInbound(Self.bytes(1))
        try fixture.channel.writeInbound(WebSocketFrame(fin: false, opcode: .binary, data: ByteBuffer(bytes: [UInt8](repeating: 0x10, count: 481))))
        try fixture.channel.writeInbound(WebSocketFrame(fin: true, opcode: .continuation, data: ByteBuffer(bytes: [UInt8](repeating: 0x10, count: 479))))
        let base64 = Base64.encode([UInt8](repeating: 0x10, count: 960))
        try fixture.channel.writeInbound(Self.text(#"{"type":"audio","data":""# + base64 + #""}"#))
        try fixture.channel.writeInbound(Self.text(#"{"type":"mark","name":"after"}"#))
        #expect(fixture.holds(milliseconds: 60), "\(fixture.queued) frames queued")
        #expect(fixture.target.ingest.frames == 1441)
        #expect(fixture.stream.pendingMarks == ["after"])
        #expect(try fixture.forwarded().isEmpty, "data messages never reach the reader")
    }

    @Test("long messages, fragmented text and malformed text are taken or answered; a broken sequence closes")
    func unusualMessages() async throws {
        let fixture = try Fixture(maxMessageBytes: 64 * 1024)
        fixture.attach()
        try fixture.channel.writeInbound(Self.text("not json"))
        var events = fixture.listener.events.makeAsyncIterator()
        guard case .error(let code, _) = await events.next() else {
            Issue.record("no error event for malformed text")
            return
        }
        #expect(code == "invalid_json")
        // Longer than one slice (0.5 s): converted a slice per pass of the loop, reading held meanwhile.
        try fixture.channel.writeInbound(Self.audio(milliseconds: 600))
        #expect(fixture.holds(milliseconds: 500), "\(fixture.queued) frames queued")
        fixture.channel.embeddedEventLoop.run()
        #expect(fixture.holds(milliseconds: 600), "\(fixture.queued) frames queued")
        try fixture.channel.writeInbound(Self.text(#"{"type":"ma"#, fin: false))
        try fixture.channel.writeInbound(Self.text(#"rk","name":"split"}"#, opcode: .continuation))
        #expect(fixture.stream.pendingMarks == ["split"])
        #expect(try fixture.forwarded().isEmpty)
        #expect(try fixture.channel.readOutbound(as: WebSocketFrame.self) == nil)

        // More than the largest message, in fragments: the socket closes with 1009.
        try fixture.channel.writeInbound(Self.audio(milliseconds: 1000, fin: false))
        try fixture.channel.writeInbound(Self.audio(milliseconds: 1000, opcode: .continuation))
        fixture.channel.embeddedEventLoop.run()
        let close = try #require(try fixture.channel.readOutbound(as: WebSocketFrame.self))
        var data = close.data
        #expect(close.opcode == .connectionClose)
        #expect(data.readWebSocketErrorCode() == .messageTooLarge)

        let stray = try Fixture()
        stray.attach()
        try stray.channel.writeInbound(Self.audio(milliseconds: 20, opcode: .continuation))
        let protocolClose = try #require(try stray.channel.readOutbound(as: WebSocketFrame.self))
        var protocolData = protocolClose.data
        #expect(protocolData.readWebSocketErrorCode() == .protocolError)
        #expect(stray.queued == 0)
    }

    @Test("a full queue stops reading until the device takes it below the low watermark, with no timer")
    func fullQueueStopsReading() throws {
        let fixture = try Fixture(queueSeconds: 1)
        fixture.attach()
        // 51 chunks: the resampler holds a little back, so the 51st is the first to find the limit reached.
        for _ in 0..<51 { try fixture.channel.writeInbound(Self.audio(milliseconds: 20)) }
        #expect(fixture.holds(milliseconds: 1020), "\(fixture.queued) frames queued")
        try fixture.channel.writeInbound(Self.audio(milliseconds: 20))
        try fixture.channel.writeInbound(Self.text(#"{"type":"mark","name":"late"}"#))
        fixture.channel.read()
        #expect(fixture.holds(milliseconds: 1020), "\(fixture.queued) frames queued")
        #expect(fixture.counter.reads == 0)
        fixture.channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(fixture.counter.reads == 0, "still full: nothing polls")

        // Above the low watermark (750 ms): nobody is woken.
        fixture.play(milliseconds: 200)
        fixture.channel.embeddedEventLoop.run()
        #expect(fixture.counter.reads == 0)
        #expect(fixture.stream.pendingMarks.isEmpty)
        // Down to it: the pull wakes the handler on its loop, which takes what waited and reads on.
        fixture.play(milliseconds: 100)
        fixture.channel.embeddedEventLoop.run()
        #expect(fixture.holds(milliseconds: 740), "\(fixture.queued) frames queued")
        #expect(fixture.stream.pendingMarks == ["late"])
        #expect(fixture.counter.reads == 1)

        // A clear empties the queue and wakes a waiting socket too.
        for _ in 0..<20 { try fixture.channel.writeInbound(Self.audio(milliseconds: 20)) }
        try fixture.channel.writeInbound(Self.audio(milliseconds: 20))
        fixture.channel.read()
        #expect(fixture.counter.reads == 1)
        fixture.stream.clear()
        fixture.channel.embeddedEventLoop.run()
        // What waited, and the chunks held behind it, went in after the clear.
        #expect(fixture.queued > 0 && fixture.queued <= 200 * 48, "\(fixture.queued) frames queued")
        #expect(fixture.counter.reads == 2)
    }

    @Test("the installer puts the handler right behind the frame decoder when the upgrade completes")
    func installedAfterUpgrade() throws {
        let channel = EmbeddedChannel()
        let bound = try #require(PlaybackFrameHandler.install(on: channel))
        try channel.pipeline.syncOperations.addHandler(WebSocketFrameEncoder())
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(WebSocketFrameDecoder()))
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: PlaybackFrameHandler.self) }
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/v1/playback")
        channel.pipeline.fireUserInboundEventTriggered(
            HTTPServerUpgradeEvents.upgradeComplete(toProtocol: "websocket", upgradeRequest: head))
        let installed = try channel.pipeline.syncOperations.handler(type: PlaybackFrameHandler.self)
        #expect(installed === bound.value)
        #expect(throws: (any Error).self) {
            try channel.pipeline.syncOperations.handler(type: PlaybackFrameHandler.Installer.self)
        }
        // A frame on the wire now reaches the handler decoded: it is held until the stream is attached.
        try channel.writeInbound(ByteBuffer(bytes: [0x82, 0x02, 0, 0]))
        #expect(try channel.readInbound(as: WebSocketFrame.self) == nil)
    }
}
