import AudioGateCore
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One FLAC or Ogg Opus segment on disk, owned through its file descriptor.
///
/// PCM goes through a `StreamingEncoder`; each piece it hands back ends at a FLAC frame or an Ogg page
/// and is appended to the file at once, so the file decodes up to its last whole frame or page
/// whenever it is read, or the process dies.
final class EncodedSegmentFile: SegmentWriting {
    /// Disk space set aside for the stream headers before they are written.
    static let headerReserve = 8192
    /// Longest audio in one Ogg page: what a crash can lose beyond the last page, as WAV loses
    /// what came after its last header flush.
    static let pageMilliseconds = 1000

    let path: String
    let codec: RecordingCodec
    private let format: AudioFormat
    private let encoder: StreamingEncoder
    private var descriptor: Int32
    private(set) var fileBytes = 0
    /// Frames handed to the encoder (FLAC's total samples once finished).
    private var frames = 0
    /// The stream headers as written: FLAC's STREAMINFO is patched from them at the end.
    private let header: [UInt8]
    private var samples: [Float] = []
    private var pieces: [EncodedPiece] = []

    /// Creates a new file (never replacing one) holding the stream headers.
    init(creating path: String, codec: RecordingCodec, format: AudioFormat, bitrate: Int?) throws(RecordingError) {
        self.path = path
        self.codec = codec
        self.format = format
        let encoding = AudioEncoding(
            container: codec == .flac ? .flac : .ogg, codec: codec == .flac ? .flac : .opus, rate: format.rate,
            channels: format.channels, bitrate: codec == .opus ? bitrate : nil)
        do {
            encoder = try StreamingEncoder(encoding, flushMilliseconds: Self.pageMilliseconds)
        } catch {
            throw RecordingError(.encoder, "cannot open the \(codec.rawValue) encoder: \(error)")
        }
        let header = Array(encoder.header.readableBytesView)
        self.header = header
        descriptor = try createSegmentFile(at: path) { descriptor throws(RecordingError) in
            try header.withRecordingBytes { raw throws(RecordingError) in
                try Self.write(raw, to: descriptor, at: 0, path: path)
            }
        }
        fileBytes = header.count
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Every byte written ends at a frame or page: a download may take the whole file.
    var readableBytes: Int? { fileBytes }

    /// Encodes whole frames of PCM in the recording's format and appends what the encoder completes.
    func append(_ bytes: UnsafeRawBufferPointer) throws(RecordingError) {
        let count = bytes.count / format.sampleFormat.bytesPerSample / format.channels * format.channels
        guard count > 0 else { return }
        if samples.count < count { samples = [Float](repeating: 0, count: count) }
        let decoded = samples.withUnsafeMutableBufferPointer { SampleConversion.decode(bytes, format: format.sampleFormat, into: $0) }
        do {
            try samples.withUnsafeBufferPointer { buffer throws(CodecError) in
                try encoder.encode(UnsafeBufferPointer(rebasing: buffer[0..<decoded]), into: &pieces)
            }
        } catch {
            throw RecordingError(.encoder, "the \(codec.rawValue) encoder failed: \(error)")
        }
        frames += decoded / format.channels
        try writePieces()
    }

    /// Nothing to do: every piece is whole on disk as soon as the encoder completes it.
    func checkpoint() throws(RecordingError) {}

    /// Encodes the last frames, writes the trailer (Ogg's end-of-stream page), sets FLAC's total
    /// samples, and makes the file durable; then closes it.
    func finish() throws(RecordingError) {
        guard descriptor >= 0 else { return }
        defer {
            close(descriptor)
            descriptor = -1
        }
        do {
            try encoder.finish(into: &pieces)
        } catch {
            throw RecordingError(.encoder, "the \(codec.rawValue) encoder failed: \(error)")
        }
        try writePieces()
        if codec == .flac { try Self.setTotalSamples(frames, descriptor: descriptor, path: path, header: header) }
        try systemCheck("fdatasync", path: path) { fdatasync(descriptor) }
    }

    /// The encoder writes STREAMINFO before it knows the length (0: unknown); a finished or repaired
    /// file states it, so players show the duration and can seek.
    static func setTotalSamples(_ samples: Int, descriptor: Int32, path: String, header: [UInt8]) throws(RecordingError) {
        // `fLaC`, the block header, then the 34-byte STREAMINFO body.
        guard header.count >= 42 else { return }
        var streamInfo = Array(header[8..<42])
        FLACFrames.setTotalSamples(samples, in: &streamInfo)
        let written = try streamInfo.withRecordingBytes { raw throws(RecordingError) in
            try systemCheck("write", path: path) { pwrite(descriptor, raw.baseAddress, raw.count, 8) }
        }
        guard written == streamInfo.count else { throw RecordingError(.io, "short STREAMINFO write to \(path)") }
    }

    private func writePieces() throws(RecordingError) {
        defer { pieces.removeAll(keepingCapacity: true) }
        for piece in pieces {
            let result: Result<Void, RecordingError> = piece.bytes.withUnsafeReadableBytes { raw in
                do throws(RecordingError) {
                    try write(raw)
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
            try result.get()
        }
    }

    private func write(_ bytes: UnsafeRawBufferPointer) throws(RecordingError) {
        try Self.write(bytes, to: descriptor, at: fileBytes, path: path)
        fileBytes += bytes.count
    }

    /// Writes all of `bytes` at `position`; a piece cut short (a full disk) is cut off again, so it
    /// never stays in front of the next one.
    private static func write(
        _ bytes: UnsafeRawBufferPointer, to descriptor: Int32, at position: Int, path: String
    ) throws(RecordingError) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        do {
            while offset < bytes.count {
                offset += try systemCheck("write", path: path) {
                    pwrite(descriptor, base + offset, bytes.count - offset, off_t(position + offset))
                }
            }
        } catch {
            _ = ftruncate(descriptor, off_t(position))
            throw error
        }
    }
}
