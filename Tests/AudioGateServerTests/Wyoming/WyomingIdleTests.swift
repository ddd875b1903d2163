import NIOCore
import NIOEmbedded
import Testing

@testable import AudioGateServer

@Suite("Wyoming: part of an event and then nothing is closed after the idle timeout")
struct WyomingIdleTests {
    static let timeout = TimeAmount.seconds(2)

    /// A connected channel framed as the service frames it, with a read outstanding.
    static func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        let partial = WyomingPartialEvent()
        try channel.pipeline.syncOperations.addHandler(WyomingIdleHandler(timeout: timeout, partial: partial))
        try channel.pipeline.syncOperations.addHandler(
            ByteToMessageHandler(WyomingFrameDecoder(limits: WyomingLimits(), partial: partial)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 10600)).wait()
        channel.read()
        return channel
    }

    /// Bytes from the peer as a socket hands them over: read, read complete, then the next read
    /// unless the server holds reading back.
    static func receive(_ text: String, on channel: EmbeddedChannel, readAgain: Bool = true) throws {
        try channel.writeInbound(ByteBuffer(string: text))
        channel.pipeline.fireChannelReadComplete()
        if readAgain { channel.read() }
    }

    static func advance(_ channel: EmbeddedChannel, milliseconds: Int64) {
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(milliseconds))
    }

    /// The error the channel was closed with.
    static func closingError(_ channel: EmbeddedChannel) -> WyomingError? {
        do {
            try channel.throwIfErrorCaught()
            return nil
        } catch {
            return error as? WyomingError
        }
    }

    @Test("half a header line is closed when the timeout has passed, not before", arguments: [
        #"{"type":"descr"#,
        #"{"type":"audio-chunk","payload_length":4}"# + "\nab",
        #"{"type":"audio-chunk","data_length":12}"# + "\n{\"rate\":",
    ])
    func partial(_ text: String) throws {
        let channel = try Self.channel()
        try Self.receive(text, on: channel)
        Self.advance(channel, milliseconds: 1999)
        #expect(channel.isActive)
        Self.advance(channel, milliseconds: 1)
        #expect(!channel.isActive)
        #expect(Self.closingError(channel)?.code == .idleTimeout)
    }

    @Test("a peer quiet between whole events is not timed (a mic client only listens)")
    func betweenEvents() throws {
        let channel = try Self.channel()
        try Self.receive(#"{"type":"describe"}"# + "\n" + #"{"type":"ping"}"# + "\n", on: channel)
        #expect(try channel.readInbound(as: WyomingEvent.self)?.type == "describe")
        #expect(try channel.readInbound(as: WyomingEvent.self)?.type == "ping")
        Self.advance(channel, milliseconds: 600_000)
        #expect(channel.isActive)
        _ = try channel.finish()
    }

    @Test("bytes that arrive start the clock again; the rest of the event stops it")
    func progress() throws {
        let channel = try Self.channel()
        try Self.receive(#"{"type":"audio-chunk","#, on: channel)
        Self.advance(channel, milliseconds: 1500)
        try Self.receive(#""payload_length":4}"# + "\nab", on: channel)
        Self.advance(channel, milliseconds: 1500)
        #expect(channel.isActive)
        try Self.receive("cd", on: channel)
        #expect(try channel.readInbound(as: WyomingEvent.self)?.payload?.readableBytes == 4)
        Self.advance(channel, milliseconds: 600_000)
        #expect(channel.isActive)
        _ = try channel.finish()
    }

    @Test("a peer the server has stopped reading (a full playback queue) is not timed until reading goes on")
    func heldBack() throws {
        let channel = try Self.channel()
        try Self.receive(#"{"type":"audio-chunk","payload_length":4}"# + "\nab", on: channel, readAgain: false)
        Self.advance(channel, milliseconds: 600_000)
        #expect(channel.isActive)
        channel.read()
        Self.advance(channel, milliseconds: 1999)
        #expect(channel.isActive)
        Self.advance(channel, milliseconds: 1)
        #expect(!channel.isActive)
    }
}
