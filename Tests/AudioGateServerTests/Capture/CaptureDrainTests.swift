import AudioGateCore
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import AudioGateServer

@Suite("capture fan-out batched per event loop")
struct CaptureDrainTests {
    static let hardware = AudioFormat(rate: 48000, channels: 1, sampleFormat: .f32le)

    /// One 10 ms hardware period of a constant 0.25 signal, timestamped `period` periods after 1 s.
    static func capture(_ hub: CaptureHub, period: Int) {
        let samples = [Float](repeating: 0.25, count: 480)
        samples.withUnsafeBufferPointer {
            hub.captured($0, frames: 480, format: hardware, timestamp: 1_000_000_000 + UInt64(period) * 10_000_000)
        }
    }

    static func frames(_ channel: EmbeddedChannel) throws -> [WebSocketFrame] {
        var frames: [WebSocketFrame] = []
        while let frame = try channel.readOutbound(as: WebSocketFrame.self) { frames.append(frame) }
        return frames
    }

    @Test("ten clients of one event loop: one wake-up per period, each gets every chunk in order")
    func oneBatchPerPeriod() throws {
        let hub = CaptureHub(configuration: ServerConfiguration(), metrics: ServerMetrics(), logger: TestServer.logger)
        let loop = EmbeddedEventLoop()
        let parameters = try CaptureParameters(query: ["rate": "48000", "chunk_ms": "10"])  // 960-byte chunks
        let channels = (0..<10).map { _ in EmbeddedChannel(loop: loop) }
        let subscribers = try channels.map { try hub.subscribe(parameters, transport: .webSocket, channel: $0) }
        // Audio captured before the start message is out waits in the queue and follows it.
        Self.capture(hub, period: 0)
        for subscriber in subscribers { subscriber.writer?.start(subscriber, message: "{\"type\":\"start\"}") }
        let drain = try #require(subscribers.first?.writer?.drain)
        #expect(drain.runs == 0)
        for period in 1...20 {
            Self.capture(hub, period: period)
            loop.run()
        }
        #expect(drain.runs == 20)
        for channel in channels {
            let frames = try Self.frames(channel)
            #expect(frames.count == 22)
            #expect(frames.first?.opcode == .text)
            let audio = frames.dropFirst()
            #expect(audio.allSatisfy { $0.opcode == .binary && $0.data.readableBytes == 960 })
            // 0.25 full scale as s16le is 8192.
            let first = try #require(audio.first)
            #expect(first.data.getInteger(at: first.data.readerIndex, endianness: .little, as: Int16.self) == 8192)
            // Room for the frame header in front of the payload: NIO's encoder writes it there, one buffer a frame.
            #expect(audio.allSatisfy { $0.data.readerIndex >= 10 })
        }
        #expect(subscribers.allSatisfy { $0.sentChunks == 21 })
        for subscriber in subscribers { hub.unsubscribe(subscriber) }
        Self.capture(hub, period: 21)
        loop.run()
        #expect(try channels.allSatisfy { try Self.frames($0).isEmpty })
        #expect(drain.runs == 20)
    }

    @Test("a socket that is not writable keeps a bounded queue, drops the oldest and reports it when writable again")
    func backpressure() throws {
        let hub = CaptureHub(configuration: ServerConfiguration(), metrics: ServerMetrics(), logger: TestServer.logger)
        let loop = EmbeddedEventLoop()
        let parameters = try CaptureParameters(query: ["rate": "48000", "chunk_ms": "10"])
        let stalled = EmbeddedChannel(loop: loop)
        let healthy = EmbeddedChannel(loop: loop)
        let slow = try hub.subscribe(parameters, transport: .webSocket, queueMilliseconds: 50, channel: stalled)
        let fast = try hub.subscribe(parameters, transport: .webSocket, queueMilliseconds: 50, channel: healthy)
        for subscriber in [slow, fast] { subscriber.writer?.start(subscriber, message: "{\"type\":\"start\"}") }
        _ = try Self.frames(stalled)
        _ = try Self.frames(healthy)
        stalled.isWritable = false
        for period in 0..<21 {
            Self.capture(hub, period: period)
            loop.run()
        }
        #expect(try Self.frames(stalled).isEmpty)
        #expect(try Self.frames(healthy).count == 21)
        #expect(slow.queuedMilliseconds == 50)

        stalled.isWritable = true
        Self.capture(hub, period: 21)
        loop.run()
        let frames = try Self.frames(stalled)
        // 22 chunks into a queue of 5: the 17 oldest went, reported once before the 5 newest.
        #expect(frames.count == 6)
        let overrun = frames.first.map { String(buffer: $0.data) }
        #expect(overrun == "{\"type\":\"overrun\",\"dropped_ms\":170}")
        #expect(frames.dropFirst().allSatisfy { $0.opcode == .binary })
        #expect(slow.droppedMilliseconds == 170)
        #expect(try Self.frames(healthy).count == 1)
        hub.unsubscribe(slow)
        hub.unsubscribe(fast)
    }
}
