@testable import AudioGateServer
import AudioGateTestSupport
import Foundation
import NIOCore
import Testing

/// The encoder core on its own: a known tone encoded in memory, judged by ffmpeg and ffprobe.
@Suite("encoder core")
struct EncoderTests {
    struct Case: Sendable, CustomStringConvertible {
        var encoding: AudioEncoding
        var fileExtension: String
        var codecName: String
        var description: String { "\(encoding.container.rawValue)/\(encoding.codec.rawValue) \(encoding.rate) Hz \(encoding.channels) ch" }
    }

    static let cases: [Case] = [
        Case(encoding: AudioEncoding(container: .ogg, rate: 16000, channels: 1), fileExtension: "ogg", codecName: "opus"),
        Case(encoding: AudioEncoding(container: .ogg, codec: .vorbis, rate: 44100, channels: 2), fileExtension: "ogg", codecName: "vorbis"),
        Case(encoding: AudioEncoding(container: .ogg, codec: .flac, rate: 48000, channels: 1), fileExtension: "ogg", codecName: "flac"),
        Case(encoding: AudioEncoding(container: .webm, rate: 48000, channels: 2, bitrate: 64000), fileExtension: "webm", codecName: "opus"),
        Case(encoding: AudioEncoding(container: .flac, rate: 16000, channels: 1), fileExtension: "flac", codecName: "flac"),
        Case(encoding: AudioEncoding(container: .mp3, rate: 24000, channels: 1), fileExtension: "mp3", codecName: "mp3"),
    ]

    static let frequency = 1000.0
    static let amplitude: Float = 0.5

    /// `seconds` of the tone, interleaved over `channels`.
    static func tone(rate: Int, channels: Int, seconds: Double) -> [Float] {
        let mono = Signal.sine(frequency: frequency, rate: rate, seconds: seconds, amplitude: Double(amplitude))
        return Signal.duplicate(mono, channels: channels)
    }

    /// Encodes in pieces of 20 ms, as the capture side hands them over.
    static func encode(_ encoding: AudioEncoding, seconds: Double) throws -> (header: [UInt8], pieces: [[UInt8]]) {
        let encoder = try StreamingEncoder(encoding)
        let samples = tone(rate: encoding.rate, channels: encoding.channels, seconds: seconds)
        let step = encoding.rate / 50 * encoding.channels
        var pieces: [EncodedPiece] = []
        var offset = 0
        while offset < samples.count {
            let end = min(samples.count, offset + step)
            try samples[offset..<end].withUnsafeBufferPointer { try encoder.encode($0, into: &pieces) }
            offset = end
        }
        try encoder.finish(into: &pieces)
        return (Array(buffer: encoder.header), pieces.map { Array(buffer: $0.bytes) })
    }

    /// `delaySeconds`: codec delay a stream without gapless information (MP3) cannot tell the
    /// decoder to drop; the decoded audio is then that much longer.
    static func check(
        _ decoded: FFmpegTool.Decoded, seconds: Double, rate: Int, channels: Int, lossless: Bool, frameSeconds: Double,
        delaySeconds: Double = 0
    ) {
        #expect(decoded.rate == rate)
        #expect(decoded.channels == channels)
        let excess = decoded.seconds - seconds - delaySeconds
        #expect(abs(excess) <= frameSeconds, "decoded \(decoded.seconds) s of \(seconds) s (+\(delaySeconds) s delay)")
        let mono = decoded.mono
        let middle = Array(mono[(mono.count / 4)..<(mono.count * 3 / 4)])
        let pitch = Goertzel.dominantFrequency(middle, rate: rate, near: frequency)
        #expect(abs(pitch - frequency) < 1, "pitch \(pitch) Hz")
        let expected = 20 * log10(Double(amplitude) / 2.0.squareRoot())
        let level = Signal.rmsDBFS(middle)
        #expect(abs(level - expected) <= (lossless ? 1 : 2), "level \(level) dBFS, expected \(expected)")
    }

    @Test("each container and codec decodes to the tone's length, pitch and level", arguments: cases)
    func roundTrip(_ test: Case) throws {
        let seconds = 2.0
        let (header, pieces) = try Self.encode(test.encoding, seconds: seconds)
        let bytes = header + pieces.flatMap { $0 }
        let decoded = try FFmpegTool.withFile(bytes, fileExtension: test.fileExtension) { path in
            let stream = FFmpegTool.audioStream(try FFmpegTool.probe(path))
            #expect(stream["codec_name"] as? String == test.codecName)
            return try FFmpegTool.decode(path)
        }
        let encoder = try StreamingEncoder(test.encoding)
        let frameSeconds = Double(encoder.frameSize) / Double(test.encoding.rate)
        // Opus decodes at 48 kHz whatever it was encoded at (the header's rate is informational).
        let rate = test.encoding.codec == .opus ? 48000 : test.encoding.rate
        let delay = test.encoding.container == .mp3 ? Double(encoder.codecDelay) / Double(test.encoding.rate) : 0
        Self.check(
            decoded, seconds: seconds, rate: rate, channels: test.encoding.channels,
            lossless: !test.encoding.isLossy, frameSeconds: frameSeconds, delaySeconds: delay)
    }

    @Test("a late joiner's stream (headers, then pieces from the middle) decodes without errors", arguments: cases)
    func lateJoiner(_ test: Case) throws {
        let (header, pieces) = try Self.encode(test.encoding, seconds: 3)
        #expect(pieces.count > 4)
        let joined = header + pieces[(pieces.count / 2)...].flatMap { $0 }
        let decoded = try FFmpegTool.decode(joined, fileExtension: test.fileExtension)
        #expect(decoded.seconds > 1 && decoded.seconds < 2, "\(decoded.seconds) s")
        let pitch = Goertzel.dominantFrequency(Array(decoded.mono.suffix(decoded.rate / 2)), rate: decoded.rate, near: Self.frequency)
        #expect(abs(pitch - Self.frequency) < 1)
    }

    @Test("m4a is AAC in MP4 with the index (moov) before the audio (mdat)")
    func m4a() throws {
        let path = NSTemporaryDirectory() + "audiogate-encoder-\(UUID().uuidString).m4a"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let encoding = AudioEncoding(container: .m4a, rate: 16000, channels: 1)
        let encoder = try StreamingEncoder(encoding, path: path)
        var pieces: [EncodedPiece] = []
        let samples = Self.tone(rate: 16000, channels: 1, seconds: 2)
        try samples.withUnsafeBufferPointer { try encoder.encode($0, into: &pieces) }
        try encoder.finish(into: &pieces)
        #expect(pieces.isEmpty)
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let boxes = MP4Boxes.topLevel(bytes)
        let moov = boxes.firstIndex(of: "moov")
        let mdat = boxes.firstIndex(of: "mdat")
        #expect(moov != nil && mdat != nil && moov! < mdat!, "\(boxes)")
        #expect(FFmpegTool.audioStream(try FFmpegTool.probe(path))["codec_name"] as? String == "aac")
        Self.check(try FFmpegTool.decode(path), seconds: 2, rate: 16000, channels: 1, lossless: false, frameSeconds: 1024.0 / 16000)
    }

    @Test("bare Opus packets: each one decodes alone to chunk_ms of audio; pre-skip is reported")
    func packets() throws {
        let encoding = AudioEncoding(container: .packets, rate: 16000, channels: 1, packetMilliseconds: 20)
        let (header, pieces) = try Self.encode(encoding, seconds: 1)
        #expect(header.isEmpty)
        #expect(pieces.count >= 50 && pieces.count <= 51)
        let encoder = try StreamingEncoder(encoding)
        #expect(encoder.preSkip == 312)
        // Opus' TOC byte: configuration 16-19 (CELT) or 8-11 (SILK WB) etc.; code 0 = one frame.
        // Every packet's frame count must be one 20 ms frame.
        for piece in pieces { #expect(piece[0] & 0x03 == 0, "TOC \(piece[0])") }
    }

    @Test("impossible settings name the parameter", arguments: [
        (AudioEncoding(container: .ogg, codec: .mp3, rate: 16000, channels: 1), "codec"),
        (AudioEncoding(container: .packets, rate: 16000, channels: 3), "channels"),
        (AudioEncoding(container: .packets, rate: 16000, channels: 1, packetMilliseconds: 25), "chunk_ms"),
        (AudioEncoding(container: .ogg, rate: 44100, channels: 1), "rate"),
        (AudioEncoding(container: .mp3, rate: 16000, channels: 1, bitrate: 1_000_000), "bitrate"),
        (AudioEncoding(container: .flac, rate: 16000, channels: 1, bitrate: 64000), "bitrate"),
    ])
    func invalid(_ encoding: AudioEncoding, parameter: String) {
        #expect(throws: EncodingError.self) { try encoding.validate() }
        do {
            try encoding.validate()
        } catch {
            #expect(error.parameter == parameter)
        }
    }
}

/// The top-level boxes of an MP4 file, in order.
enum MP4Boxes {
    static func topLevel(_ bytes: [UInt8]) -> [String] {
        var names: [String] = []
        var offset = 0
        while offset + 8 <= bytes.count {
            var size = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            names.append(String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self))
            if size == 1, offset + 16 <= bytes.count {
                size = bytes[(offset + 8)..<(offset + 16)].reduce(0) { $0 << 8 | Int($1) }
            }
            guard size >= 8 else { break }
            offset += size
        }
        return names
    }
}
