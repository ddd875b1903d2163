import AudioGateCore
import AudioGateDevices
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

    /// The address of a frame's payload, to tell a shared buffer from a copy.
    static func address(_ frame: WebSocketFrame) -> Int {
        frame.data.withUnsafeReadableBytes { Int(bitPattern: $0.baseAddress) }
    }

    @Test("binary clients of one chunk length share one buffer per chunk and event loop, cut once")
    func lanesShareChunks() throws {
        let hub = CaptureHub(configuration: ServerConfiguration(), metrics: ServerMetrics(), logger: TestServer.logger)
        let loops = [EmbeddedEventLoop(), EmbeddedEventLoop()]
        let parameters = try CaptureParameters(query: ["rate": "48000", "chunk_ms": "20"])  // 1920-byte chunks
        let channels = (0..<6).map { EmbeddedChannel(loop: loops[$0 % 2]) }
        let subscribers = try channels.map { try hub.subscribe(parameters, transport: .webSocket, channel: $0) }
        #expect(subscribers.allSatisfy { $0.sharesChunks })
        for subscriber in subscribers { subscriber.writer?.start(subscriber, message: "{\"type\":\"start\"}") }
        for channel in channels { _ = try Self.frames(channel) }
        for period in 0..<8 {
            Self.capture(hub, period: period)
            for loop in loops { loop.run() }
        }
        let received = try channels.map { try Self.frames($0) }
        #expect(received.allSatisfy { $0.count == 4 && $0.allSatisfy { $0.opcode == .binary && $0.data.readableBytes == 1920 } })
        // Every client's n-th chunk is the same memory as its event loop's other clients': one buffer
        // per chunk per event loop, never one per client; and the same bytes on both loops.
        for index in 0..<4 {
            for loop in 0..<2 {
                let members = received.indices.filter { $0 % 2 == loop }
                #expect(Set(members.map { Self.address(received[$0][index]) }).count == 1)
            }
            #expect(Set(received.map { Self.address($0[index]) }).count == 2)
            #expect(Set(received.map { Array($0[index].data.readableBytesView) }).count == 1)
        }
        #expect(Set(received[0].map(Self.address)).count == 4)
        #expect(subscribers.allSatisfy { $0.sentChunks == 4 })
        for subscriber in subscribers { hub.unsubscribe(subscriber) }
    }

    @Test("JSON clients, other chunk lengths and late joiners in one group each get whole chunks of their own length")
    func lanesBesideCopies() throws {
        let hub = CaptureHub(configuration: ServerConfiguration(), metrics: ServerMetrics(), logger: TestServer.logger)
        let loop = EmbeddedEventLoop()
        func subscribe(_ query: [String: String]) throws -> (CaptureSubscriber, EmbeddedChannel) {
            let channel = EmbeddedChannel(loop: loop)
            let subscriber = try hub.subscribe(
                CaptureParameters(query: query.merging(["rate": "48000"]) { $1 }), transport: .webSocket, channel: channel)
            subscriber.writer?.start(subscriber, message: "{\"type\":\"start\"}")
            _ = try Self.frames(channel)
            return (subscriber, channel)
        }
        let (tenSubscriber, ten) = try subscribe(["chunk_ms": "10"])
        let (thirtySubscriber, thirty) = try subscribe(["chunk_ms": "30"])
        let (jsonSubscriber, json) = try subscribe(["chunk_ms": "10", "encoding": "json"])
        #expect(tenSubscriber.sharesChunks && thirtySubscriber.sharesChunks && !jsonSubscriber.sharesChunks)
        Self.capture(hub, period: 0)
        loop.run()
        // Joins in the middle of the 30 ms lane's chunk: its first chunk is the one being cut.
        let (lateSubscriber, late) = try subscribe(["chunk_ms": "30"])
        for period in 1..<6 {
            Self.capture(hub, period: period)
            loop.run()
        }
        let tenSizes = try Self.frames(ten).map(\.data.readableBytes)
        let thirtySizes = try Self.frames(thirty).map(\.data.readableBytes)
        let lateSizes = try Self.frames(late).map(\.data.readableBytes)
        #expect(tenSizes == Array(repeating: 960, count: 6))
        #expect(thirtySizes == [2880, 2880])
        #expect(lateSizes == [2880, 2880])
        let jsonFrames = try Self.frames(json)
        #expect(jsonFrames.count == 6 && jsonFrames.allSatisfy { $0.opcode == .text })
        for subscriber in [tenSubscriber, thirtySubscriber, jsonSubscriber, lateSubscriber] { hub.unsubscribe(subscriber) }
    }

    @Test("a lane member hears of a lost device after the audio captured before it and before the audio after it")
    func laneDeviceEventOrder() throws {
        let hub = CaptureHub(configuration: ServerConfiguration(), metrics: ServerMetrics(), logger: TestServer.logger)
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        let subscriber = try hub.subscribe(
            CaptureParameters(query: ["rate": "48000", "chunk_ms": "10"]), transport: .webSocket, channel: channel)
        subscriber.writer?.start(subscriber, message: "{\"type\":\"start\"}")
        _ = try Self.frames(channel)
        func status(_ state: DeviceState) -> DeviceStatus { DeviceStatus(name: "test", direction: .capture, state: state) }
        hub.captureStatusChanged(status(.running))
        // The capture thread posts two chunks and the loss before the event loop runs.
        Self.capture(hub, period: 0)
        Self.capture(hub, period: 1)
        hub.captureStatusChanged(status(.recovering))
        loop.run()
        hub.captureStatusChanged(status(.running))
        Self.capture(hub, period: 2)
        loop.run()
        let kinds = try Self.frames(channel).map { frame -> String in
            frame.opcode == .binary ? "audio" : String(buffer: frame.data)
        }
        #expect(kinds == [
            "audio", "audio", "{\"type\":\"device\",\"state\":\"lost\"}", "{\"type\":\"device\",\"state\":\"restored\"}",
            "audio",
        ])
        hub.unsubscribe(subscriber)
    }

    /// The messages in what a channel with a `WebSocketFrameEncoder` wrote: "audio" for a binary
    /// frame of `payload` bytes, a text frame's text.
    static func encodedMessages(_ channel: EmbeddedChannel, payload: Int) throws -> [String] {
        var bytes = ByteBuffer()
        while var buffer = try channel.readOutbound(as: ByteBuffer.self) { bytes.writeBuffer(&buffer) }
        var messages: [String] = []
        while let first = bytes.readInteger(as: UInt8.self), let second = bytes.readInteger(as: UInt8.self) {
            var length = Int(second & 0x7F)
            if length == 126 { length = Int(bytes.readInteger(as: UInt16.self) ?? 0) }
            guard let body = bytes.readSlice(length: length) else { break }
            messages.append(first == 0x82 && length == payload ? "audio" : String(buffer: body))
        }
        return messages
    }

    @Test("with the frame encoder in the pipeline a lane member's chunks go straight to its socket, in order with device events")
    func laneDirectWrites() throws {
        let hub = CaptureHub(configuration: ServerConfiguration(), metrics: ServerMetrics(), logger: TestServer.logger)
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(handler: WebSocketFrameEncoder(), loop: loop)
        let subscriber = try hub.subscribe(
            CaptureParameters(query: ["rate": "48000", "chunk_ms": "10"]), transport: .webSocket, channel: channel)
        subscriber.writer?.start(subscriber, message: "{\"type\":\"start\"}")
        func status(_ state: DeviceState) -> DeviceStatus { DeviceStatus(name: "test", direction: .capture, state: state) }
        hub.captureStatusChanged(status(.running))
        Self.capture(hub, period: 0)
        loop.run()
        Self.capture(hub, period: 1)
        hub.captureStatusChanged(status(.recovering))
        loop.run()
        hub.captureStatusChanged(status(.running))
        for period in 2..<5 {
            Self.capture(hub, period: period)
            loop.run()
        }
        #expect(try Self.encodedMessages(channel, payload: 960) == [
            "{\"type\":\"start\"}", "audio", "audio", "{\"type\":\"device\",\"state\":\"lost\"}",
            "{\"type\":\"device\",\"state\":\"restored\"}", "audio", "audio", "audio",
        ])
        #expect(subscriber.sentChunks == 5)
        // Every write is timed, direct or queued.
        #expect(hub.sendDelayStatus.count == 5)
        hub.unsubscribe(subscriber)
    }
}
