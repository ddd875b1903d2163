import AudioGateCore
import AudioGateDevices
@testable import AudioGateServer
import NIOCore
import Testing

@Suite("capture parameters and subscriber queue")
struct CaptureUnitTests {
    @Test("defaults are 16 kHz mono s16le, 20 ms binary chunks")
    func defaults() throws {
        let parameters = try CaptureParameters(query: [:])
        #expect(parameters.format == AudioFormat(rate: 16000, channels: 1, sampleFormat: .s16le))
        #expect(parameters.chunkMilliseconds == 20)
        #expect(parameters.chunkBytes == 640)
        #expect(parameters.encoding == .binary)
        #expect(parameters.container == .raw)
        #expect(parameters.seconds == nil)
    }

    @Test("every listed rate, both formats and both channel counts are accepted")
    func accepted() throws {
        for rate in ClientFormats.captureRates {
            for format in ["s16le", "f32le"] {
                let parameters = try CaptureParameters(query: [
                    "rate": "\(rate)", "format": format, "channels": "2", "chunk_ms": "10", "encoding": "json",
                    "levels": "true", "container": "wav", "seconds": "1.5", "token": "ignored",
                ])
                #expect(parameters.format.rate == rate)
                #expect(parameters.totalFrames == Int((1.5 * Double(rate)).rounded()))
            }
        }
    }

    @Test(
        "bad values name the parameter",
        arguments: [
            ("rate", "12345"), ("rate", "abc"), ("channels", "7"), ("channels", "0"), ("format", "mp3"),
            ("format", "s24le"), ("chunk_ms", "0"), ("chunk_ms", "201"), ("chunk_ms", "9"), ("encoding", "xml"),
            ("levels", "maybe"), ("container", "aiff"), ("seconds", "0"), ("seconds", "-1"), ("seconds", "nan"),
            ("seconds", "1e9"), ("rate", "9223372036854775808"), ("rate", "-9223372036854775809"), ("rate", "-16000"),
            ("channels", "99999999999999999999"), ("chunk_ms", "-9223372036854775808"), ("seconds", "1e400"),
            ("seconds", "inf"), ("seconds", "-inf"), ("seconds", "1e-400"),
        ])
    func rejected(name: String, value: String) {
        #expect {
            try CaptureParameters(query: [name: value])
        } throws: { error in
            guard let error = error as? CaptureError else { return false }
            return error.reason == .badParameter && error.message.contains("'\(name)'")
        }
    }

    @Test("chunks at 11025 Hz round to whole frames")
    func fractionalChunk() throws {
        let parameters = try CaptureParameters(query: ["rate": "11025", "chunk_ms": "10"])
        #expect(parameters.chunkFrames == 110)
    }

    @Test("a full queue drops whole chunks from the old end and reports them once")
    func dropOldest() async throws {
        let parameters = try CaptureParameters(query: ["chunk_ms": "10"])  // 160 frames, 320 bytes
        let subscriber = CaptureSubscriber(id: 1, parameters: parameters, transport: .webSocket, queueMilliseconds: 50)
        #expect(subscriber.capacityChunks == 5)
        // 8 chunks, each chunk's bytes set to its index, in blocks that do not align with chunks.
        var bytes: [UInt8] = []
        for chunk in 0..<8 { bytes += [UInt8](repeating: UInt8(chunk), count: 320) }
        var offset = 0
        let framePeriod = 1e9 / 16000
        while offset < bytes.count {
            let end = min(offset + 300, bytes.count)
            bytes[offset..<end].withUnsafeBufferPointer { block in
                subscriber.append(block, start: Double(offset / 2) * framePeriod, nanosecondsPerFrame: framePeriod, ready: 7)
            }
            offset = end
        }
        var buffer: [UInt8] = []
        #expect(await subscriber.next(into: &buffer) == .overrun(droppedMilliseconds: 30))
        for expected in 3..<8 {
            let event = await subscriber.next(into: &buffer)
            guard case .chunk(let seq, let timestamp, let ready) = event else {
                Issue.record("expected a chunk, got \(String(describing: event))")
                return
            }
            #expect(seq == UInt64(expected - 3))
            #expect(abs(Double(timestamp) - Double(expected * 160) * framePeriod) <= 1)
            #expect(ready == 7)
            #expect(buffer == [UInt8](repeating: UInt8(expected), count: 320))
        }
        #expect(subscriber.droppedMilliseconds == 30)
        #expect(subscriber.queuedMilliseconds == 0)
    }

    @Test("a device event comes after the audio captured before it, and before the audio after it")
    func eventOrder() async throws {
        let parameters = try CaptureParameters(query: ["chunk_ms": "10"])  // 320 bytes
        let subscriber = CaptureSubscriber(id: 1, parameters: parameters, transport: .webSocket, queueMilliseconds: 30)
        let framePeriod = 1e9 / 16000
        func append(_ value: UInt8, chunks: Int) {
            [UInt8](repeating: value, count: 320 * chunks).withUnsafeBufferPointer { block in
                subscriber.append(block, start: 0, nanosecondsPerFrame: framePeriod, ready: 0)
            }
        }
        // Six chunks into a queue of three: three are dropped, and the loss still waits for the two left.
        append(1, chunks: 5)
        subscriber.deliver(.lost)
        subscriber.deliver(.restored)
        append(2, chunks: 1)
        var buffer: [UInt8] = []
        var events: [String] = []
        while subscriber.queuedMilliseconds > 0 {
            switch await subscriber.next(into: &buffer) {
            case .chunk: events.append("audio \(buffer[0])")
            case .device(let state): events.append(state.rawValue)
            case .overrun(let milliseconds): events.append("overrun \(milliseconds)")
            default: events.append("other")
            }
        }
        #expect(events == ["overrun 30", "audio 1", "audio 1", "lost", "restored", "audio 2"])
    }

    @Test("an outage counts as lost time, also when the device was lost before its first period")
    func lostBeforeFirstPeriod() async throws {
        let hub = CaptureHub(configuration: ServerConfiguration(), metrics: ServerMetrics(), logger: TestServer.logger)
        let format = AudioFormat(rate: 48000, channels: 1, sampleFormat: .f32le)
        let period = [Float](repeating: 0, count: 480)
        func status(_ state: DeviceState) -> DeviceStatus { DeviceStatus(name: "test", direction: .capture, state: state) }
        func capture(at timestamp: UInt64) {
            period.withUnsafeBufferPointer { hub.captured($0, frames: 480, format: format, timestamp: timestamp) }
        }
        // Opened, lost before any audio, restored 300 ms later: the first period after is 300 ms late.
        hub.captureStatusChanged(status(.running))
        hub.captureStatusChanged(status(.recovering))
        try await Task.sleep(for: .milliseconds(300))
        hub.captureStatusChanged(status(.running))
        capture(at: MonotonicClock.nowNanoseconds())
        #expect(hub.lostMilliseconds >= 290)
        // With audio before the loss, the gap is measured from the end of the last period.
        let before = hub.lostMilliseconds
        let last = MonotonicClock.nowNanoseconds()
        capture(at: last)
        hub.captureStatusChanged(status(.recovering))
        hub.captureStatusChanged(status(.running))
        capture(at: last + 10_000_000 + 200_000_000)
        #expect(abs(hub.lostMilliseconds - before - 200) < 1)
        // Without an xrun or outage, jitter is not lost time but a jump of the timeline is.
        let settled = hub.lostMilliseconds
        capture(at: last + 220_000_000 + 10_000_000)
        #expect(hub.lostMilliseconds == settled)
        capture(at: last + 240_000_000 + 60_000_000)
        #expect(abs(hub.lostMilliseconds - settled - 60) < 1)
    }

    @Test("device events are deduplicated; close ends the wait")
    func events() async throws {
        let subscriber = CaptureSubscriber(
            id: 1, parameters: try CaptureParameters(query: [:]), transport: .webSocket, queueMilliseconds: 1000)
        subscriber.deliver(.lost)
        subscriber.deliver(.lost)
        subscriber.deliver(.restored)
        var buffer: [UInt8] = []
        #expect(await subscriber.next(into: &buffer) == .device(.lost))
        #expect(await subscriber.next(into: &buffer) == .device(.restored))
        let waiter = Task {
            var buffer: [UInt8] = []
            return await subscriber.next(into: &buffer)
        }
        try await Task.sleep(for: .milliseconds(50))
        subscriber.close()
        #expect(await waiter.value == nil)
    }

    @Test("a cancelled waiter returns nil")
    func cancellation() async throws {
        let subscriber = CaptureSubscriber(
            id: 1, parameters: try CaptureParameters(query: [:]), transport: .http, queueMilliseconds: 1000)
        let waiter = Task {
            var buffer: [UInt8] = []
            return await subscriber.next(into: &buffer)
        }
        try await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        #expect(await waiter.value == nil)
    }

    @Test("the hub asks the capture thread to read once per shortest chunk of its subscribers")
    func batchFollowsShortestChunk() throws {
        let hub = CaptureHub(configuration: ServerConfiguration(), metrics: ServerMetrics(), logger: TestServer.logger)
        #expect(hub.batchMilliseconds == Int.max)
        let slow = try hub.subscribe(CaptureParameters(query: ["chunk_ms": "100"]), transport: .http)
        #expect(hub.batchMilliseconds == 100)
        let fast = try hub.subscribe(CaptureParameters(query: ["chunk_ms": "20", "rate": "24000"]), transport: .http)
        #expect(hub.batchMilliseconds == 20)
        hub.unsubscribe(fast)
        #expect(hub.batchMilliseconds == 100)
        hub.unsubscribe(slow)
        #expect(hub.batchMilliseconds == Int.max)
    }

    @Test("audio frames get an RFC 6455 header in their header room: 7-bit, 16-bit and 64-bit lengths")
    func binaryFrameHeader() {
        for (length, header) in [
            (100, [0x82, 100]), (640, [0x82, 126, 0x02, 0x80]),
            (70000, [0x82, 127, 0, 0, 0, 0, 0, 0x01, 0x11, 0x70]),
        ] as [(Int, [UInt8])] {
            var buffer = ByteBufferAllocator().buffer(capacity: length + CaptureChannelWriter.headerRoom)
            buffer.moveWriterIndex(forwardBy: CaptureChannelWriter.headerRoom)
            buffer.moveReaderIndex(forwardBy: CaptureChannelWriter.headerRoom)
            buffer.writeRepeatingByte(7, count: length)
            CaptureChannelWriter.prependBinaryFrameHeader(&buffer)
            #expect(buffer.readableBytes == length + header.count)
            #expect(buffer.getBytes(at: buffer.readerIndex, length: header.count) == header)
            #expect(buffer.getInteger(at: buffer.readerIndex + header.count, as: UInt8.self) == 7)
        }
    }
}
