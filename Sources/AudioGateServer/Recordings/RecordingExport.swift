import AudioGateCore
import AudioGateDevices
import Foundation
import Hummingbird
import NIOCore
import NIOPosix

/// A recording, or one of its segments, converted on the fly to WAV, FLAC, Ogg/Opus, MP3 or M4A.
///
/// Segments are read in blocks and encoded on the thread pool, never on an event loop; every
/// piece goes out as soon as it is encoded. M4A's index must precede the audio (faststart) and an
/// MP3's LAME tag (its gapless information) is written at the end, which libavformat can only do
/// on a seekable file: these are muxed into a temporary file first (unlinked once open), then
/// streamed from it.
struct RecordingExport: Sendable {
    /// What the timeline is made of, in order.
    enum Part: Sendable {
        /// A WAV segment's samples: `frames` frames after its header.
        case wav(path: String, frames: Int)
        /// A FLAC or Ogg Opus segment: its first `bytes` bytes (whole frames or pages) decoded to
        /// `frames` frames, padded with silence or cut to them.
        case encoded(path: String, codec: RecordingCodec, frames: Int, bytes: Int)
        /// Frames of silence (a stretch the timeline has no segment for).
        case silence(frames: Int)
    }

    /// The file types offered, by extension.
    enum Kind: String, Sendable, CaseIterable {
        case wav, flac, ogg, mp3, m4a

        /// The file name's kind; a 400 naming the extension otherwise.
        static func parse(_ name: String, base: String) throws(RecordingError) -> Kind? {
            guard let dot = name.lastIndex(of: ".") else { return nil }
            guard name[..<dot] == base else { return nil }
            let text = String(name[name.index(after: dot)...])
            guard let kind = Kind(rawValue: text) else {
                throw RecordingError.parameter("extension", "one of \(Kind.allCases.map { "." + $0.rawValue }.joined(separator: ", "))")
            }
            return kind
        }

        var container: AudioEncoding.Container? {
            switch self {
            case .wav: nil
            case .flac: .flac
            case .ogg: .ogg
            case .mp3: .mp3
            case .m4a: .m4a
            }
        }

        var contentType: String {
            switch self {
            case .wav: "audio/wav"
            case .flac: "audio/flac"
            case .ogg: "audio/ogg"
            case .mp3: "audio/mpeg"
            case .m4a: "audio/mp4"
            }
        }
    }

    let parts: [Part]
    /// The segments' sample format.
    let format: AudioFormat
    let kind: Kind
    /// File name offered to the client.
    let name: String

    /// Frames blocks are read and encoded in.
    static let blockFrames = 16384

    var totalFrames: Int {
        parts.reduce(0) { total, part in
            switch part {
            case .wav(_, let frames), .encoded(_, _, let frames, _), .silence(let frames): total + frames
            }
        }
    }

    /// The encoding for `kind` at the recording's format (nil for WAV): the rate is the codec's
    /// nearest one (Opus has no 44.1 kHz), the samples resampled when it differs.
    var encoding: AudioEncoding? {
        guard let container = kind.container else { return nil }
        let codec = container.defaultCodec
        return AudioEncoding(container: container, codec: codec, rate: codec.nearestRate(to: format.rate), channels: format.channels)
    }

    func response() -> Response {
        let headers: HTTPFields = [
            .contentType: encoding?.contentType ?? kind.contentType,
            .contentDisposition: "attachment; filename=\"\(name)\"",
        ]
        switch kind {
        case .wav: return Response(status: .ok, headers: headers, body: wavBody())
        case .m4a, .mp3: return Response(status: .ok, headers: headers, body: fileBody())
        case .flac, .ogg: return Response(status: .ok, headers: headers, body: streamedBody())
        }
    }

    /// The header for every frame, then the segments' samples and silence as they are.
    private func wavBody() -> ResponseBody {
        let format = format
        let header = WAVHeader.encode(format: format, dataByteCount: totalFrames * format.bytesPerFrame)
        let parts = parts
        return ResponseBody(contentLength: header.count + totalFrames * format.bytesPerFrame) { writer in
            try await writer.write(ByteBuffer(bytes: header))
            let reader = PartReader(parts: parts, format: format)
            while let block = try await NIOThreadPool.singleton.runIfActive({ try reader.nextBytes(Self.blockFrames) }) {
                try await writer.write(ByteBuffer(bytes: block))
            }
            try await writer.finish(nil)
        }
    }

    /// FLAC and Ogg: encoded block by block, each piece sent as it comes.
    private func streamedBody() -> ResponseBody {
        let parts = parts
        let format = format
        let encoding = encoding!
        return ResponseBody { writer in
            let job = try await NIOThreadPool.singleton.runIfActive { try ExportJob(parts: parts, format: format, encoding: encoding, path: nil) }
            try await writer.write(job.header)
            while true {
                let (pieces, done) = try await NIOThreadPool.singleton.runIfActive { try job.step() }
                for piece in pieces { try await writer.write(piece.bytes) }
                if done { break }
            }
            try await writer.finish(nil)
        }
    }

    /// M4A and MP3: muxed whole into a temporary file, then sent. M4A's index moves to the front
    /// at the end; MP3's LAME tag is rewritten with the encoder's delay and padding, so decoders
    /// give back exactly the recording's length.
    private func fileBody() -> ResponseBody {
        let parts = parts
        let format = format
        let encoding = encoding!
        return ResponseBody { writer in
            let path = NSTemporaryDirectory() + "audiogate-export-\(UUID().uuidString).\(encoding.container.fileExtension)"
            let file: FileDescriptorBox
            do {
                file = try await NIOThreadPool.singleton.runIfActive { () throws -> FileDescriptorBox in
                    let job = try ExportJob(parts: parts, format: format, encoding: encoding, path: path)
                    while try !job.step().done {}
                    let file = try FileDescriptorBox(temporary: path)
                    // Open, the file needs no name: it goes when the last reference to it does.
                    unlink(path)
                    return file
                }
            } catch {
                _ = try? await NIOThreadPool.singleton.runIfActive { unlink(path) }
                throw error
            }
            var offset = 0
            while true {
                let start = offset
                let block = try await NIOThreadPool.singleton.runIfActive { try file.read(64 << 10, at: start) }
                if block.isEmpty { break }
                try await writer.write(ByteBuffer(bytes: block))
                offset += block.count
            }
            try await writer.finish(nil)
        }
    }
}

/// Reads a timeline's parts in order: bytes as stored, or float samples.
///
/// Unchecked Sendable: one export's task uses it, one thread-pool call at a time.
final class PartReader: @unchecked Sendable {
    private let parts: [RecordingExport.Part]
    private let format: AudioFormat
    private var index = 0
    private var offsetFrames = 0
    private var file: FileDescriptorBox?
    private var decoder: SegmentDecoder?

    init(parts: [RecordingExport.Part], format: AudioFormat) {
        self.parts = parts
        self.format = format
    }

    /// Up to `frames` frames as stored (silence as zero bytes); nil at the end.
    func nextBytes(_ frames: Int) throws -> [UInt8]? {
        while index < parts.count {
            let part = parts[index]
            switch part {
            case .silence(let total):
                let count = min(frames, total - offsetFrames)
                if count <= 0 { advance(); continue }
                offsetFrames += count
                return [UInt8](repeating: 0, count: count * format.bytesPerFrame)
            case .wav(let path, let total):
                let count = min(frames, total - offsetFrames)
                if count <= 0 { advance(); continue }
                if file == nil { file = try FileDescriptorBox(path: path) }
                let bytes = try file!.read(count * format.bytesPerFrame, at: SegmentFile.headerBytes + offsetFrames * format.bytesPerFrame)
                guard bytes.count == count * format.bytesPerFrame else {
                    throw RecordingError(.io, "the segment file is shorter than listed")
                }
                offsetFrames += count
                return bytes
            case .encoded(let path, let codec, let total, let bytes):
                let count = min(frames, total - offsetFrames)
                if count <= 0 { advance(); continue }
                if decoder == nil { decoder = try SegmentDecoder(path: path, codec: codec, format: format, bytes: bytes) }
                var samples = try decoder!.next(count)
                // The listed length rules: a decoder short by its last frame is made up with silence.
                if samples.count < count * format.channels { samples += [Float](repeating: 0, count: count * format.channels - samples.count) }
                offsetFrames += count
                return SampleConversion.encode(samples, format: format.sampleFormat)
            }
        }
        return nil
    }

    /// Up to `frames` frames as interleaved float; nil at the end.
    func nextSamples(_ frames: Int) throws -> [Float]? {
        try nextBytes(frames).map { SampleConversion.decode($0, format: format.sampleFormat) }
    }

    private func advance() {
        index += 1
        offsetFrames = 0
        file = nil
        decoder = nil
    }
}

/// One export's encoder, reader and resampler.
///
/// Unchecked Sendable: one export's task uses it, one thread-pool call at a time.
final class ExportJob: @unchecked Sendable {
    private let reader: PartReader
    private let encoder: StreamingEncoder
    private let resampler: Resampler?
    private var done = false

    init(parts: [RecordingExport.Part], format: AudioFormat, encoding: AudioEncoding, path: String?) throws {
        reader = PartReader(parts: parts, format: format)
        encoder = try path.map { path throws(CodecError) in try StreamingEncoder(encoding, path: path) } ?? StreamingEncoder(encoding)
        resampler = encoding.rate == format.rate
            ? nil : try Resampler(inputRate: format.rate, outputRate: encoding.rate, channels: format.channels, quality: .medium)
    }

    /// The container's headers.
    var header: ByteBuffer { encoder.header }

    /// Reads and encodes one block; the pieces it completed, and whether the file is complete.
    func step() throws -> (pieces: [EncodedPiece], done: Bool) {
        guard !done else { return ([], true) }
        var pieces: [EncodedPiece] = []
        if let samples = try reader.nextSamples(RecordingExport.blockFrames) {
            let converted = resampler?.process(samples) ?? samples
            try converted.withUnsafeBufferPointer { buffer throws(CodecError) in try encoder.encode(buffer, into: &pieces) }
            return (pieces, false)
        }
        if let tail = resampler?.process([], endOfInput: true), !tail.isEmpty {
            try tail.withUnsafeBufferPointer { buffer throws(CodecError) in try encoder.encode(buffer, into: &pieces) }
        }
        try encoder.finish(into: &pieces)
        done = true
        return (pieces, true)
    }
}
