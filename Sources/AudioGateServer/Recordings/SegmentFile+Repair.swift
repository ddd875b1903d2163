import AudioGateCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension SegmentFile {
    /// Makes a segment left behind by a crash valid: the header counts every whole frame in the file
    /// and a trailing partial frame is cut off. Answers the frames kept (0 removes the file).
    static func repair(path: String, format: AudioFormat) throws(RecordingError) -> Int {
        let descriptor = try RecordingFile.open(path, O_WRONLY)
        defer { close(descriptor) }
        var info = stat()
        try systemCheck("fstat", path: path) { fstat(descriptor, &info) }
        let frames = max(0, (Int(info.st_size) - headerBytes) / format.bytesPerFrame)
        guard frames > 0 else {
            try RecordingFile.remove(path)
            return 0
        }
        let dataBytes = frames * format.bytesPerFrame
        let header = WAVHeader.encode(format: format, dataByteCount: dataBytes)
        _ = try header.withRecordingBytes { raw throws(RecordingError) in
            try systemCheck("write", path: path) { pwrite(descriptor, raw.baseAddress, raw.count, 0) }
        }
        try systemCheck("ftruncate", path: path) { ftruncate(descriptor, off_t(headerBytes + dataBytes)) }
        try systemCheck("fsync", path: path) { fsync(descriptor) }
        return frames
    }
}
