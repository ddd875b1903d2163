import AudioGateCore
import Foundation
import NIOCore
import Testing

@testable import AudioGateServer

@Suite("Snapcast protocol")
struct SnapcastProtocolTests {
    private func message(type: UInt16, refersTo: UInt16 = 0, sent: SnapcastTimestamp = .init(seconds: 0, microseconds: 0), body: [UInt8])
        -> ByteBuffer
    {
        var buffer = ByteBuffer()
        SnapcastHeader(type: type, refersTo: refersTo, sent: sent, size: UInt32(body.count)).write(to: &buffer)
        buffer.writeBytes(body)
        return buffer
    }

    private func blob(_ bytes: [UInt8]) -> [UInt8] {
        withUnsafeBytes(of: UInt32(bytes.count).littleEndian, Array.init) + bytes
    }

    @Test("the base header is 26 bytes, little endian, and reads back")
    func header() throws {
        var buffer = ByteBuffer()
        let header = SnapcastHeader(
            type: 4, id: 7, refersTo: 3, sent: .init(seconds: 11, microseconds: 12), received: .init(seconds: -1, microseconds: 5),
            size: 8)
        header.write(to: &buffer)
        #expect(buffer.readableBytes == 26)
        #expect(Array(buffer.readableBytesView.prefix(4)) == [4, 0, 7, 0])
        #expect(SnapcastHeader.read(from: &buffer) == header)
    }

    @Test("settings, codec header, chunk and time answer decode, byte by byte too")
    func messages() throws {
        let json = Array(#"{"bufferMs":800,"latency":20,"muted":true,"volume":42}"#.utf8)
        var stream = message(type: 3, body: blob(json))
        stream.writeImmutableBuffer(message(type: 1, body: blob(Array("flac".utf8)) + blob([1, 2, 3])))
        stream.writeImmutableBuffer(message(type: 2, body: [5, 0, 0, 0, 6, 0, 0, 0] + blob([9, 9])))
        stream.writeImmutableBuffer(message(type: 4, refersTo: 12, sent: .init(seconds: 100, microseconds: 0), body: [1, 0, 0, 0, 0, 0, 0, 0]))
        var decoder = SnapcastFrameDecoder()
        var input = ByteBuffer()
        var decoded: [SnapcastMessage] = []
        // One byte at a time: nothing is decided before a whole message is in.
        for byte in stream.readableBytesView {
            input.writeInteger(byte)
            while let message = try decoder.next(from: &input) { decoded.append(message) }
        }
        #expect(decoded.count == 4)
        guard decoded.count == 4 else { return }
        guard case .serverSettings(let settings) = decoded[0] else { Issue.record("not settings"); return }
        #expect(settings == SnapcastServerSettings(bufferMs: 800, latency: 20, volume: 42, muted: true))
        guard case .codecHeader(let header) = decoded[1] else { Issue.record("not a codec header"); return }
        #expect(header == SnapcastCodecHeader(codec: "flac", payload: [1, 2, 3]))
        guard case .wireChunk(let timestamp, let payload) = decoded[2] else { Issue.record("not a chunk"); return }
        #expect(timestamp == SnapcastTimestamp(seconds: 5, microseconds: 6))
        #expect(Array(payload.readableBytesView) == [9, 9])
        guard case .time(let reply) = decoded[3] else { Issue.record("not a time answer"); return }
        #expect(reply.refersTo == 12 && reply.latency == SnapcastTimestamp(seconds: 1, microseconds: 0))
    }

    @Test("an unknown type or an oversized message is refused from its header alone")
    func refusals() {
        for type: UInt16 in [0, 5, 9, 77, 0xFFFF] {
            var decoder = SnapcastFrameDecoder()
            var buffer = ByteBuffer()
            SnapcastHeader(type: type, size: 4).write(to: &buffer)
            #expect(throws: SnapcastError.self) { _ = try decoder.next(from: &buffer) }
        }
        var decoder = SnapcastFrameDecoder()
        var buffer = ByteBuffer()
        SnapcastHeader(type: 2, size: UInt32(SnapcastFrameDecoder.maximumMessageBytes + 1)).write(to: &buffer)
        do {
            _ = try decoder.next(from: &buffer)
            Issue.record("an oversized message was accepted")
        } catch {
            #expect(error.code == .messageTooLarge)
        }
    }

    @Test("lengths past the end, bad JSON and bad codec headers are errors, not crashes")
    func malformed() throws {
        let cases: [(ByteBuffer, SnapcastError.Code)] = [
            (message(type: 1, body: [200, 0, 0, 0, 1]), .badCodecHeader),
            (message(type: 2, body: [0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255]), .malformedMessage),
            (message(type: 3, body: blob(Array("[[[[[[[[[[[[1]]]]]]]]]]]]".utf8))), .malformedMessage),
            (message(type: 3, body: blob(Array("not json".utf8))), .malformedMessage),
            (message(type: 4, body: [1]), .malformedMessage),
        ]
        for (input, code) in cases {
            var buffer = input
            var decoder = SnapcastFrameDecoder()
            do {
                _ = try decoder.next(from: &buffer)
                Issue.record("accepted \(code)")
            } catch {
                #expect(error.code == code)
            }
        }
        for header in [
            SnapcastCodecHeader(codec: "mp3", payload: []), SnapcastCodecHeader(codec: "flac", payload: Array("fLaC".utf8)),
            SnapcastCodecHeader(codec: "pcm", payload: [1, 2, 3]), SnapcastCodecHeader(codec: "opus", payload: [0, 0, 0, 0]),
            SnapcastCodecHeader(codec: "ogg", payload: Array("OggS garbage".utf8)),
            SnapcastCodecHeader(codec: "flac", payload: Array("fLaC".utf8) + [UInt8](repeating: 0xFF, count: 60)),
        ] {
            #expect(throws: SnapcastError.self, "\(header.codec)") { _ = try SnapcastDecoder(header: header) }
        }
    }

    @Test("the software mixer curve is snapclient's (exp, base 10)")
    func volume() {
        #expect(SnapcastVolume.gain(volume: 100) == 1)
        #expect(SnapcastVolume.gain(volume: 0) == 0)
        #expect(abs(SnapcastVolume.gain(volume: 50) - 0.240_253) < 1e-5)
        #expect(abs(20 * log10(Double(SnapcastVolume.gain(volume: 40))) - (-15.495)) < 0.01)
        #expect(SnapcastVolume.gain(volume: 250) == 1 && SnapcastVolume.gain(volume: -3) == 0)
    }

    @Test("the clock is the median of the last 200 measurements, forgotten after a minute")
    func clock() {
        let clock = SnapcastClock()
        #expect(clock.count == 0)
        for (index, diff) in [10.0, 1000, 12, 11, -500].enumerated() {
            clock.add(diffMicroseconds: diff, now: UInt64(index) * 1_000_000_000)
        }
        #expect(clock.diffMicroseconds == 11)
        #expect(clock.jitterMicroseconds == 1)
        for index in 0..<300 { clock.add(diffMicroseconds: 40, now: UInt64(10 + index) * 1_000_000) }
        #expect(clock.count == SnapcastClock.window && clock.diffMicroseconds == 40)
        clock.add(diffMicroseconds: 7, now: 100_000_000_000)
        #expect(clock.count == 1 && clock.diffMicroseconds == 7)
    }

    @Test("a Time answer gives snapclient's offset: half the difference of the one-way latencies")
    func timeDiff() {
        // Sent at client 10.000000; server got it at server 15.000100 (latency 5.000100); server
        // answered at server 15.000200; client got it at 10.000300 -> diff 5.0 s exactly.
        let reply = SnapcastTimeReply(
            refersTo: 1, latency: .init(seconds: 5, microseconds: 100), sent: .init(seconds: 15, microseconds: 200),
            receivedNanoseconds: 10_000_300_000)
        #expect(reply.diffMicroseconds == 5_000_000)
    }

    @Test("HOST[:PORT] parses with the default port; bad forms are refused")
    func server() {
        #expect(SnapcastConfiguration.parseServer("music.local")! == ("music.local", 1704))
        #expect(SnapcastConfiguration.parseServer("10.0.0.2:1800")! == ("10.0.0.2", 1800))
        #expect(SnapcastConfiguration.parseServer("[::1]:1705")! == ("::1", 1705))
        #expect(SnapcastConfiguration.parseServer("::1")! == ("::1", 1704))
        for bad in ["", ":1704", "host:0", "host:99999", "host:x", "[::1"] {
            #expect(SnapcastConfiguration.parseServer(bad) == nil, "\(bad)")
        }
        #expect(SnapcastConfiguration.defaultID == SnapcastConfiguration.defaultID)
        #expect(SnapcastConfiguration.defaultID.hasPrefix("audiogate-"))
    }

    @Test("Ogg packets are reassembled across pages and chunks")
    func ogg() throws {
        func page(_ segments: [UInt8], _ data: [UInt8]) -> [UInt8] {
            Array("OggS".utf8) + [UInt8](repeating: 0, count: 22) + [UInt8(segments.count)] + segments + data
        }
        let big = [UInt8](repeating: 7, count: 300)
        // Packet A (3 bytes) and the first 255 bytes of B on page 1; the rest of B (45 bytes) on page 2.
        let first = page([3, 255], [1, 2, 3] + big[0..<255])
        let second = page([45], Array(big[255...]))
        var packets = SnapcastOggPackets()
        var seen: [[UInt8]] = []
        for chunk in [first, second] {
            try withSnapcastBytes(chunk) { bytes throws(SnapcastError) in try packets.packets(in: bytes) { seen.append(Array($0)) } }
        }
        #expect(seen == [[1, 2, 3], big])
        #expect(throws: SnapcastError.self) {
            try withSnapcastBytes(Array("OggX".utf8)) { bytes throws(SnapcastError) in try packets.packets(in: bytes) { _ in } }
        }
    }
}
