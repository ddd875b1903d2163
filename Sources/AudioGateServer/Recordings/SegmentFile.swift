import AudioGateCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One WAV segment on disk, owned through its file descriptor.
///
/// The header is written first and rewritten on every `flushHeader()`, always after the data it
/// counts, so the file is a valid WAV up to the last flush whenever the process dies.
final class SegmentFile: SegmentWriting {
    /// Bytes of the canonical header in front of the samples.
    static let headerBytes = 44

    let path: String
    let format: AudioFormat
    private var descriptor: Int32
    /// Sample bytes written so far.
    private(set) var dataBytes = 0

    /// Creates a new file (never replacing one) holding an empty WAV.
    init(creating path: String, format: AudioFormat) throws(RecordingError) {
        self.path = path
        self.format = format
        descriptor = try createSegmentFile(at: path) { descriptor throws(RecordingError) in
            try Self.writeHeader(to: descriptor, path: path, format: format, dataBytes: 0)
        }
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Appends sample bytes at the end of the file.
    func append(_ bytes: UnsafeRawBufferPointer) throws(RecordingError) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let written = try systemCheck("write", path: path) {
                pwrite(descriptor, base + offset, bytes.count - offset, off_t(Self.headerBytes + dataBytes + offset))
            }
            offset += written
        }
        dataBytes += bytes.count
    }

    var fileBytes: Int { Self.headerBytes + dataBytes }

    var readableBytes: Int? { nil }

    /// Rewrites the header so it counts every byte written so far.
    func checkpoint() throws(RecordingError) {
        try writeHeader()
    }

    /// Makes the header final and the file durable, then closes it.
    func finish() throws(RecordingError) {
        guard descriptor >= 0 else { return }
        defer {
            close(descriptor)
            descriptor = -1
        }
        try writeHeader()
        try systemCheck("fdatasync", path: path) { fdatasync(descriptor) }
    }

    private func writeHeader() throws(RecordingError) {
        try Self.writeHeader(to: descriptor, path: path, format: format, dataBytes: dataBytes)
    }

    private static func writeHeader(to descriptor: Int32, path: String, format: AudioFormat, dataBytes: Int) throws(RecordingError) {
        let header = WAVHeader.encode(format: format, dataByteCount: dataBytes)
        let written = try header.withRecordingBytes { raw throws(RecordingError) in
            try systemCheck("write", path: path) { pwrite(descriptor, raw.baseAddress, raw.count, 0) }
        }
        guard written == header.count else { throw RecordingError(.io, "short header write to \(path)") }
    }
}
