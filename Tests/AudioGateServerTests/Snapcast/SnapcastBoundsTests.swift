import AudioGateCore
import Foundation
import NIOCore
import NIOEmbedded
import Testing

@testable import AudioGateServer

/// Every number a snapserver sends is bounded before the clock arithmetic sees it: overflowing,
/// negative, oversized and truncated values give a typed error or are held at a bound, never a trap.
@Suite("Snapcast bounds")
struct SnapcastBoundsTests {
    private func message(type: UInt16, size: UInt32? = nil, sent: SnapcastTimestamp = .init(seconds: 0, microseconds: 0), body: [UInt8])
        -> ByteBuffer
    {
        var buffer = ByteBuffer()
        SnapcastHeader(type: type, sent: sent, size: size ?? UInt32(body.count)).write(to: &buffer)
        buffer.writeBytes(body)
        return buffer
    }

    private func blob(_ bytes: [UInt8]) -> [UInt8] {
        withUnsafeBytes(of: UInt32(bytes.count).littleEndian, Array.init) + bytes
    }

    private func settings(_ json: String) throws(SnapcastError) -> SnapcastServerSettings? {
        var buffer = message(type: 3, body: blob(Array(json.utf8)))
        var decoder = SnapcastFrameDecoder()
        guard case .serverSettings(let settings)? = try decoder.next(from: &buffer) else { return nil }
        return settings
    }

    /// The code of the error `body` throws, nil when it throws none.
    private func code(_ body: () throws -> Void) -> SnapcastError.Code? {
        do {
            try body()
            return nil
        } catch let error as SnapcastError {
            return error.code
        } catch {
            Issue.record("not a SnapcastError: \(error)")
            return nil
        }
    }

    @Test("ServerSettings outside bufferMs 0...60000, latency ±10000, volume 0...100 are refused")
    func settingsRanges() throws {
        let refused: [(String, SnapcastError.Code)] = [
            (#"{"bufferMs":9223372036854775807}"#, .outOfRange),
            (#"{"bufferMs":9223372036854775000,"latency":-9223372036854775000}"#, .outOfRange),
            (#"{"bufferMs":-1}"#, .outOfRange),
            (#"{"bufferMs":60001}"#, .outOfRange),
            (#"{"bufferMs":-9223372036854775808}"#, .outOfRange),
            (#"{"latency":10001}"#, .outOfRange),
            (#"{"latency":-10001}"#, .outOfRange),
            (#"{"latency":-9223372036854775808}"#, .outOfRange),
            (#"{"volume":101}"#, .outOfRange),
            (#"{"volume":-1}"#, .outOfRange),
            // Past Int64, fractions and exponents do not decode as integers at all.
            (#"{"bufferMs":9223372036854775808}"#, .malformedMessage),
            (#"{"bufferMs":1e400}"#, .malformedMessage),
            (#"{"bufferMs":1000.5}"#, .malformedMessage),
            (#"{"latency":"10"}"#, .malformedMessage),
        ]
        for (json, expected) in refused {
            #expect(code { _ = try settings(json) } == expected, "\(json)")
        }
        let edges = try #require(try settings(#"{"bufferMs":60000,"latency":-10000,"volume":0,"muted":true}"#))
        #expect(edges == SnapcastServerSettings(bufferMs: 60000, latency: -10000, volume: 0, muted: true))
        let other = try #require(try settings(#"{"bufferMs":0,"latency":10000,"volume":100}"#))
        #expect(other.bufferMs == 0 && other.latency == 10000)
    }

    @Test("the presentation time of extreme chunk stamps and clock offsets is a value, nil or a typed error")
    func presentation() throws {
        let settings = SnapcastServerSettings(bufferMs: 1000, latency: 0, volume: 100, muted: false)
        // An ordinary chunk: stamp 100 s on a server 40 s ahead of us, 1 s buffer: ours at 61 s.
        let ordinary = try SnapcastSession.presentationNanoseconds(
            of: .init(seconds: 100, microseconds: 0), diffMicroseconds: 40_000_000, settings: settings, latencyMilliseconds: 0)
        #expect(ordinary == 61_000_000_000)
        // Before our clock's start: dropped, not wrapped.
        #expect(
            try SnapcastSession.presentationNanoseconds(
                of: .init(seconds: 1, microseconds: 0), diffMicroseconds: 40_000_000, settings: settings, latencyMilliseconds: 0) == nil)
        let stamps: [SnapcastTimestamp] = [
            .init(seconds: .max, microseconds: .max), .init(seconds: .min, microseconds: .min), .init(seconds: .max, microseconds: .min),
            .init(seconds: 0, microseconds: -1), .init(seconds: -1, microseconds: 999_999),
        ]
        let diffs: [Int64] = [0, .max, .min, SnapcastClock.maximumDiffMicroseconds, -SnapcastClock.maximumDiffMicroseconds]
        // Settings built without the decoder's check still cannot trap.
        let unchecked = [
            settings, SnapcastServerSettings(bufferMs: .max, latency: .min, volume: 0, muted: false),
            SnapcastServerSettings(bufferMs: .min, latency: .max, volume: 0, muted: false),
        ]
        var refused = 0
        var dated = 0
        for stamp in stamps {
            for diff in diffs {
                for settings in unchecked {
                    for latency in [0, 10_000, Int.max, Int.min] {
                        do throws(SnapcastError) {
                            if try SnapcastSession.presentationNanoseconds(
                                of: stamp, diffMicroseconds: diff, settings: settings, latencyMilliseconds: latency) != nil
                            {
                                dated += 1
                            }
                        } catch {
                            #expect(error.code == .outOfRange)
                            refused += 1
                        }
                    }
                }
            }
        }
        // Wire stamps with a measured offset always fit; only offsets no Time answer can give overflow.
        #expect(refused > 0 && dated > 0)
        for stamp in stamps {
            for diff in [0, SnapcastClock.maximumDiffMicroseconds, -SnapcastClock.maximumDiffMicroseconds] {
                #expect(throws: Never.self) {
                    _ = try SnapcastSession.presentationNanoseconds(of: stamp, diffMicroseconds: diff, settings: settings, latencyMilliseconds: 0)
                }
            }
        }
    }

    @Test("Time answers with extreme stamps give a finite offset, and the clock holds any offset in range")
    func clockBounds() {
        let extremes: [SnapcastTimestamp] = [
            .init(seconds: .max, microseconds: .max), .init(seconds: .min, microseconds: .min), .init(seconds: 0, microseconds: 0),
        ]
        let clock = SnapcastClock()
        for latency in extremes {
            for sent in extremes {
                for received: UInt64 in [0, .max, 1 << 63] {
                    let diff = SnapcastTimeReply(refersTo: 1, latency: latency, sent: sent, receivedNanoseconds: received).diffMicroseconds
                    #expect(diff.isFinite && abs(diff) < Double(SnapcastClock.maximumDiffMicroseconds))
                    clock.add(diffMicroseconds: diff, now: received)
                }
            }
        }
        let held = SnapcastClock()
        for value in [Double.nan, .infinity, -.infinity, 1e300, -1e300, Double(Int64.max), Double(Int64.min)] {
            held.add(diffMicroseconds: value, now: 1)
        }
        #expect(held.count == 6)
        #expect(abs(held.diffMicroseconds) <= SnapcastClock.maximumDiffMicroseconds)
        #expect(held.jitterMicroseconds <= 2 * SnapcastClock.maximumDiffMicroseconds)
    }

    @Test("a 4 GB size, absurd codec header lengths and truncated messages are refused or wait, never trap")
    func sizes() throws {
        // A size field of 4 GB is refused from the header, before any body byte.
        var huge = message(type: 2, size: 0xFFFF_FFFF, body: [])
        var decoder = SnapcastFrameDecoder()
        #expect(code { _ = try decoder.next(from: &huge) } == .messageTooLarge)
        var huge2 = message(type: 1, size: 0x8000_0000, body: [])
        var decoder2 = SnapcastFrameDecoder()
        #expect(code { _ = try decoder2.next(from: &huge2) } == .messageTooLarge)

        let absurd: [(ByteBuffer, SnapcastError.Code)] = [
            // Codec name length 4 GB, 2 GB, and a name over 32 bytes.
            (message(type: 1, body: [0xFF, 0xFF, 0xFF, 0xFF, 0x70]), .badCodecHeader),
            (message(type: 1, body: [0x00, 0x00, 0x00, 0x80, 0x70]), .badCodecHeader),
            (message(type: 1, body: blob([UInt8](repeating: 0x61, count: 33)) + blob([])), .badCodecHeader),
            // Payload length past the end.
            (message(type: 1, body: blob(Array("pcm".utf8)) + [0xFE, 0xFF, 0xFF, 0xFF]), .badCodecHeader),
            (message(type: 2, body: [0, 0, 0, 0x80, 0, 0, 0, 0x80] + [0xFF, 0xFF, 0xFF, 0x7F, 1]), .malformedMessage),
            (message(type: 3, body: [0xFF, 0xFF, 0xFF, 0xFF]), .malformedMessage),
            (message(type: 3, body: []), .malformedMessage),
            (message(type: 4, body: [0xFF, 0xFF, 0xFF]), .malformedMessage),
            (message(type: 8, body: [1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]), .serverError),
        ]
        for (input, expected) in absurd {
            var buffer = input
            var decoder = SnapcastFrameDecoder()
            #expect(code { _ = try decoder.next(from: &buffer) } == expected)
        }
        // A truncated message waits for the rest (the Time timeout closes a server that stops).
        let whole = message(type: 2, body: [1, 0, 0, 0, 2, 0, 0, 0] + blob([1, 2, 3, 4]))
        for cut in [1, 25, 26, 30, whole.readableBytes - 1] {
            var buffer = whole.getSlice(at: 0, length: cut)!
            var decoder = SnapcastFrameDecoder()
            var decoded = false
            #expect(code { decoded = try decoder.next(from: &buffer) != nil } == nil)
            #expect(!decoded, "cut at \(cut)")
        }
        // Codec headers whose inner numbers are absurd: pcm at 0 Hz or 4 G channels, opus at 2^32-1 Hz.
        var pcm = WAVHeader.encode(format: AudioFormat(rate: 48000, channels: 2, sampleFormat: .s16le), dataByteCount: nil)
        pcm.replaceSubrange(24..<28, with: [0xFF, 0xFF, 0xFF, 0xFF])
        var channels = WAVHeader.encode(format: AudioFormat(rate: 48000, channels: 2, sampleFormat: .s16le), dataByteCount: nil)
        channels.replaceSubrange(22..<24, with: [0xFF, 0xFF])
        let opus: [UInt8] = [0x53, 0x55, 0x50, 0x4F, 0xFF, 0xFF, 0xFF, 0xFF, 16, 0, 0xFF, 0xFF]
        for header in [
            SnapcastCodecHeader(codec: "pcm", payload: pcm), SnapcastCodecHeader(codec: "pcm", payload: channels),
            SnapcastCodecHeader(codec: "opus", payload: opus),
        ] {
            #expect(code { _ = try SnapcastDecoder(header: header) } == .badCodecHeader)
        }
    }

    /// A connected channel with the Time handler, framed bytes in, as the client's pipeline.
    private func timedChannel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(SnapcastFrameDecoder()))
        try channel.pipeline.syncOperations.addHandler(SnapcastTimeHandler(clock: SnapcastClock()))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1704)).wait()
        return channel
    }

    private func closingCode(_ channel: EmbeddedChannel) -> SnapcastError.Code? {
        code { try channel.throwIfErrorCaught() }
    }

    @Test("a server that sends no ServerSettings within 5 s, or stops mid-message, is closed with a timeout")
    func stalledServer() throws {
        // Nothing at all, and then the start of a message that never ends.
        for prefix in [[], Array(message(type: 3, size: 1000, body: [1, 2, 3]).readableBytesView)] {
            let channel = try timedChannel()
            try channel.writeInbound(ByteBuffer(bytes: prefix))
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(4999))
            #expect(channel.isActive)
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
            #expect(!channel.isActive)
            #expect(closingCode(channel) == .timeout)
        }
        // Settings, then a truncated chunk: the Time request it sent goes unanswered and closes it
        // 2 s later, though the settings timer no longer runs.
        let channel = try timedChannel()
        try channel.writeInbound(message(type: 3, body: blob(Array(#"{"bufferMs":1000}"#.utf8))))
        try channel.writeInbound(message(type: 2, size: 500, body: [0, 0, 0, 0]))
        #expect(try channel.readOutbound(as: SnapcastRequest.self) != nil)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        #expect(closingCode(channel) == .timeout)
    }
}
