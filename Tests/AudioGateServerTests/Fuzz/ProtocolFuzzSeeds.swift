import AudioGateCore
import AudioGateTestSupport
import Foundation
import NIOCore

@testable import AudioGateServer

/// Real inputs the protocol fuzzer damages: audio made by ffmpeg, framed by the project's encoders
/// or as snapserver and the `wyoming` package frame it.
enum ProtocolFuzzSeeds {
    /// `seconds` of a 440 Hz tone written by ffmpeg with `codec` arguments into a file of `fileExtension`.
    static func tone(rate: Int, channels: Int, seconds: Double, _ codec: [String], fileExtension: String) throws -> [UInt8] {
        try FFmpegTool.convert(
            [],
            arguments: ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=\(rate):duration=\(seconds)", "-af", "volume=4", "-ac", "\(channels)"]
                + codec + ["OUTPUT"],
            outputExtension: fileExtension)
    }

    // MARK: - WAV

    /// WAV files as ffmpeg writes them (with its LIST chunk; WAVE_FORMAT_EXTENSIBLE for 24 bits and
    /// 96 kHz), and the server's own streaming header.
    static func wavFiles() throws -> [[UInt8]] {
        let kinds: [(Int, Int, String)] = [
            (16000, 1, "pcm_s16le"), (48000, 2, "pcm_f32le"), (8000, 1, "pcm_u8"), (44100, 2, "pcm_s24le"),
            (96000, 2, "pcm_s16le"), (8000, 1, "pcm_alaw"), (8000, 1, "pcm_mulaw"), (22050, 1, "pcm_s32le"),
        ]
        var files = try kinds.map { rate, channels, codec in
            try tone(rate: rate, channels: channels, seconds: 0.01, ["-c:a", codec], fileExtension: "wav")
        }
        files.append(WAVHeader.encode(format: AudioFormat(rate: 48000, channels: 2, sampleFormat: .s16le), dataByteCount: nil))
        return files
    }

    // MARK: - Snapcast

    /// A base message and its typed body, as snapserver writes them.
    static func snapcast(_ type: SnapcastHeader.MessageType, refersTo: UInt16 = 0, sent: SnapcastTimestamp = .init(seconds: 100, microseconds: 0), _ body: [UInt8])
        -> [UInt8]
    {
        var buffer = ByteBuffer()
        SnapcastHeader(type: type.rawValue, refersTo: refersTo, sent: sent, size: UInt32(body.count)).write(to: &buffer)
        buffer.writeBytes(body)
        return Array(buffer.readableBytesView)
    }

    /// A `uint32` length and the bytes.
    static func blob(_ bytes: [UInt8]) -> [UInt8] {
        withUnsafeBytes(of: UInt32(bytes.count).littleEndian, Array.init) + bytes
    }

    static func timestamp(_ seconds: Int32, _ microseconds: Int32) -> [UInt8] {
        withUnsafeBytes(of: seconds.littleEndian, Array.init) + withUnsafeBytes(of: microseconds.littleEndian, Array.init)
    }

    /// A Time answer: the frame encoder's Time request, retyped as the server's answer to it.
    static func snapcastTime(id: UInt16) -> [UInt8] {
        var buffer = ByteBuffer()
        SnapcastFrameEncoder().encode(data: .time(id: id), out: &buffer)
        var bytes = Array(buffer.readableBytesView)
        // refersTo = id; latency 0.5 ms.
        bytes[4] = UInt8(id & 0xFF)
        bytes[5] = UInt8(id >> 8)
        bytes.replaceSubrange(26..<34, with: timestamp(0, 500))
        return bytes
    }

    /// Connections as snapserver starts them: settings, codec header, a Time answer, then chunks,
    /// for each codec it sends (pcm, flac, ogg Vorbis, opus). Each is a list of messages.
    static func snapcastConnections() throws -> [[[UInt8]]] {
        let settings = snapcast(.serverSettings, blob(Array(#"{"bufferMs":1000,"latency":0,"muted":false,"volume":100}"#.utf8)))
        func connection(_ codec: String, header: [UInt8], chunks: [[UInt8]]) -> [[UInt8]] {
            var messages = [settings, snapcast(.codecHeader, blob(Array(codec.utf8)) + blob(header)), snapcastTime(id: 1)]
            for (index, chunk) in chunks.prefix(8).enumerated() {
                messages.append(snapcast(.wireChunk, timestamp(100, Int32(index) * 20_000) + blob(chunk)))
            }
            return messages
        }
        // pcm: a 44-byte streaming WAV header, then 20 ms of s16le per chunk.
        let pcm = try tone(rate: 48000, channels: 2, seconds: 0.1, ["-f", "s16le", "-c:a", "pcm_s16le"], fileExtension: "raw")
        let pcmHeader = WAVHeader.encode(format: AudioFormat(rate: 48000, channels: 2, sampleFormat: .s16le), dataByteCount: nil)
        let pcmChunks = stride(from: 0, to: pcm.count, by: 3840).map { Array(pcm[$0..<min(pcm.count, $0 + 3840)]) }
        // flac: everything before the first frame is the header, the frames are the chunk.
        let flac = try tone(rate: 48000, channels: 2, seconds: 0.1, ["-c:a", "flac"], fileExtension: "flac")
        let flacStart = flacFramesOffset(flac)
        // ogg: the pages of the three Vorbis headers, then audio pages.
        let vorbis = oggPages(try tone(rate: 44100, channels: 2, seconds: 0.2, ["-c:a", "libvorbis"], fileExtension: "ogg"))
        let headerPages = vorbisHeaderPageCount(vorbis)
        // opus: snapserver's 12-byte header ("OPUS" marker, rate, bits, channels), then raw packets.
        let opusPackets = oggPackets(try tone(rate: 48000, channels: 2, seconds: 0.1, ["-c:a", "libopus"], fileExtension: "opus"))
        var opusHeader: [UInt8] = withUnsafeBytes(of: UInt32(0x4F50_5553).littleEndian, Array.init)
        opusHeader += withUnsafeBytes(of: UInt32(48000).littleEndian, Array.init)
        opusHeader += withUnsafeBytes(of: UInt16(16).littleEndian, Array.init) + withUnsafeBytes(of: UInt16(2).littleEndian, Array.init)
        return [
            connection("pcm", header: pcmHeader, chunks: pcmChunks),
            connection("flac", header: Array(flac[..<flacStart]), chunks: [Array(flac[flacStart...])]),
            connection("ogg", header: vorbis[..<headerPages].flatMap { $0 }, chunks: Array(vorbis[headerPages...])),
            connection("opus", header: opusHeader, chunks: Array(opusPackets.dropFirst(2))),
        ]
    }

    /// Offset of the first FLAC frame: after "fLaC" and the metadata blocks.
    static func flacFramesOffset(_ bytes: [UInt8]) -> Int {
        var offset = 4
        while offset + 4 <= bytes.count {
            let last = bytes[offset] & 0x80 != 0
            offset += 4 + (Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]))
            if last { break }
        }
        return min(offset, bytes.count)
    }

    /// The Ogg pages of a file, whole.
    static func oggPages(_ bytes: [UInt8]) -> [[UInt8]] {
        var pages: [[UInt8]] = []
        var offset = 0
        while offset + 27 <= bytes.count {
            let segments = Int(bytes[offset + 26])
            guard offset + 27 + segments <= bytes.count else { break }
            let end = offset + 27 + segments + bytes[(offset + 27)..<(offset + 27 + segments)].reduce(0) { $0 + Int($1) }
            guard end <= bytes.count else { break }
            pages.append(Array(bytes[offset..<end]))
            offset = end
        }
        return pages
    }

    /// How many leading pages hold the three Vorbis header packets.
    static func vorbisHeaderPageCount(_ pages: [[UInt8]]) -> Int {
        var splitter = SnapcastOggPackets()
        var packets = 0
        for (index, page) in pages.enumerated() {
            try? withSnapcastBytes(page) { bytes throws(SnapcastError) in try splitter.packets(in: bytes) { _ in packets += 1 } }
            if packets >= 3 { return index + 1 }
        }
        return pages.count
    }

    /// The packets of an Ogg file.
    static func oggPackets(_ bytes: [UInt8]) -> [[UInt8]] {
        var splitter = SnapcastOggPackets()
        var packets: [[UInt8]] = []
        try? withSnapcastBytes(bytes) { raw throws(SnapcastError) in try splitter.packets(in: raw) { packets.append(Array($0)) } }
        return packets
    }

    // MARK: - Wyoming

    /// A snd connection as a Wyoming satellite sends it (describe, ping, audio-start, chunks of a
    /// real tone, audio-stop) and the info answer, framed by the project's encoder. One byte array per event.
    static func wyomingEvents() throws -> [[UInt8]] {
        let pcm = try tone(rate: 22050, channels: 1, seconds: 0.1, ["-f", "s16le", "-c:a", "pcm_s16le"], fileExtension: "raw")
        var events: [WyomingEvent] = [
            WyomingEvent(type: WyomingEvent.Kind.describe),
            WyomingEvent(type: WyomingEvent.Kind.ping, data: ["text": "hello"]),
            .audio(WyomingEvent.Kind.audioStart, rate: 22050, width: 2, channels: 1, timestamp: 0),
        ]
        for (index, start) in stride(from: 0, to: pcm.count, by: 2048).enumerated() {
            events.append(
                .audio(
                    WyomingEvent.Kind.audioChunk, rate: 22050, width: 2, channels: 1, timestamp: index * 46,
                    payload: ByteBuffer(bytes: pcm[start..<min(pcm.count, start + 2048)])))
        }
        events.append(.audio(WyomingEvent.Kind.audioStop, rate: 22050, width: 2, channels: 1, timestamp: 100))
        events.append(WyomingInfo.snd(rate: 22050, width: 2, channels: 1))
        return events.map { event in
            var buffer = ByteBuffer()
            WyomingFrameEncoder.encode(event, into: &buffer)
            return Array(buffer.readableBytesView)
        }
    }

    // MARK: - Playback WebSocket

    /// Text messages a playback client sends: audio of a real tone, marks, clear, pause and resume.
    static func playbackMessages() throws -> [[UInt8]] {
        let pcm = try tone(rate: 16000, channels: 1, seconds: 0.02, ["-f", "s16le", "-c:a", "pcm_s16le"], fileExtension: "raw")
        return [
            #"{"type":"audio","data":"\#(Base64.encode(pcm))"}"#, #"{"type":"mark","name":"turn-1 ☃"}"#, #"{"type":"clear"}"#, #"{"type":"clear","id":"own-3"}"#,
            #"{"type":"mark","name":"\ud83d\ude00","extra":[1,2,{"a":null}]}"#, #"{"type":"audio","data":"AAEC/w=="}"#,
            #"{"type":"pause"}"#, #"{"type":"resume"}"#,
        ].map { Array($0.utf8) }
    }
}
