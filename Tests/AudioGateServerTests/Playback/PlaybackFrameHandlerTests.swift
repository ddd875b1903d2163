import AudioGateCore
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOWebSocket
import Testing

@testable import AudioGateServer

/// The event-loop path of `/v1/playback`: what it takes, what it leaves to the socket's reader, and
/// that the order of a conversation survives the hand-over.
@Suite("playback messages taken on the event loop")
struct PlaybackFrameHandlerTests {
    static let format = AudioFormat(rate: 24000, channels: 1, sampleFormat: .s16le)

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

        init(queueSeconds: Int = 60) throws {
            var configuration = ServerConfiguration()
            configuration.limits.playbackQueueSeconds = queueSeconds
            let mixer = PlaybackMixer(configuration: configuration, metrics: ServerMetrics(), logger: TestServer.logger)
            stream = try mixer.acquire("test")
            stream.addListener(listener)
            try channel.pipeline.syncOperations.addHandlers([counter, handler, reader])
        }

        func attach() {
            handler.attach(
                .init(stream: stream, listener: listener, format: PlaybackFrameHandlerTests.format, mixFormat: { .init(rate: 48000, channels: 2, sampleFormat: .f32le) }))
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
    }

    /// `milliseconds` of client PCM, masked as a browser sends it.
    static func audio(milliseconds: Int, extraBytes: Int = 0) -> WebSocketFrame {
        let key: WebSocketMaskingKey = [1, 2, 3, 4]
        var data = ByteBuffer(bytes: [UInt8](repeating: 0x10, count: milliseconds * 48 + extraBytes))
        data.webSocketMask(key)
        return WebSocketFrame(fin: true, opcode: .binary, maskKey: key, data: data)
    }

    static func text(_ text: String) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: text))
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
        #expect(fixture.stream.queue.withLock { $0.marks.map(\.name) } == ["m1"])
        #expect(try fixture.forwarded().map(\.opcode) == [.ping])
        #expect(fixture.counter.reads == 2)

        try fixture.channel.writeInbound(Self.audio(milliseconds: 40))
        #expect(fixture.holds(milliseconds: 60), "\(fixture.queued) frames queued")
        try fixture.channel.writeInbound(Self.text(#"{"type":"clear"}"#))
        #expect(fixture.queued == 0)
        #expect(try fixture.forwarded().isEmpty)
    }

    @Test("a socket that never gets its stream hands what is held to the reader, the client's close included")
    func detachWithoutStream() throws {
        let fixture = try Fixture()
        try fixture.channel.writeInbound(Self.audio(milliseconds: 20))
        try fixture.channel.writeInbound(WebSocketFrame(fin: true, opcode: .connectionClose, data: ByteBuffer()))
        #expect(try fixture.forwarded().isEmpty)
        fixture.handler.detach()
        #expect(try fixture.forwarded().map(\.opcode) == [.binary, .connectionClose])
        #expect(fixture.queued == 0)
    }

    @Test("the first message it does not take goes to the reader with everything after it")
    func handsOverForGood() throws {
        let fixture = try Fixture()
        fixture.attach()
        try fixture.channel.writeInbound(Self.audio(milliseconds: 20))
        // Half a sample: the reader carries the odd byte into the next message.
        try fixture.channel.writeInbound(Self.audio(milliseconds: 20, extraBytes: 1))
        try fixture.channel.writeInbound(Self.text(#"{"type":"mark","name":"after"}"#))
        try fixture.channel.writeInbound(Self.audio(milliseconds: 20))
        #expect(fixture.holds(milliseconds: 20), "\(fixture.queued) frames queued")
        let forwarded = try fixture.forwarded()
        #expect(forwarded.map(\.opcode) == [.binary, .text, .binary])
        #expect(forwarded.first?.length == 961)
        #expect(fixture.stream.queue.withLock { $0.marks.isEmpty })
        fixture.channel.read()
        #expect(fixture.counter.reads == 1)
    }

    @Test("fragments, long messages and malformed text are left to the reader or answered")
    func unusualMessages() async throws {
        let fixture = try Fixture()
        fixture.attach()
        try fixture.channel.writeInbound(Self.text("not json"))
        var events = fixture.listener.events.makeAsyncIterator()
        guard case .error(let code, _) = await events.next() else {
            Issue.record("no error event for malformed text")
            return
        }
        #expect(code == "invalid_json")
        // Longer than one slice (0.5 s): the reader waits for room between slices.
        try fixture.channel.writeInbound(Self.audio(milliseconds: 600))
        try fixture.channel.writeInbound(Self.audio(milliseconds: 20))
        #expect(fixture.queued == 0)
        #expect(try fixture.forwarded().map(\.length) == [600 * 48, 20 * 48])

        let fragmented = try Fixture()
        fragmented.attach()
        try fragmented.channel.writeInbound(
            WebSocketFrame(fin: false, opcode: .binary, data: ByteBuffer(bytes: [UInt8](repeating: 0, count: 960))))
        try fragmented.channel.writeInbound(
            WebSocketFrame(fin: true, opcode: .continuation, data: ByteBuffer(bytes: [UInt8](repeating: 0, count: 960))))
        #expect(fragmented.queued == 0)
        #expect(try fragmented.forwarded().map(\.opcode) == [.binary, .continuation])
    }

    @Test("a full queue holds the next messages and stops reading until the stream has room again")
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
        fixture.channel.embeddedEventLoop.advanceTime(by: .milliseconds(40))
        #expect(fixture.counter.reads == 0, "still full")

        fixture.stream.clear()
        fixture.channel.embeddedEventLoop.advanceTime(by: .milliseconds(20))
        #expect(fixture.holds(milliseconds: 20), "\(fixture.queued) frames queued")
        #expect(fixture.stream.queue.withLock { $0.marks.map(\.name) } == ["late"])
        #expect(fixture.counter.reads == 1)
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
