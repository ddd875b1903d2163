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
        var info = stat()
        try systemCheck("stat", path: path) { stat(path, &info) }
        let frames = max(0, (Int(info.st_size) - headerBytes) / format.bytesPerFrame)
        guard frames > 0 else {
            try systemCheck("unlink", path: path) { unlink(path) }
            return 0
        }
        let dataBytes = frames * format.bytesPerFrame
        let descriptor = try systemCheck("open", path: path) { open(path, O_WRONLY | O_CLOEXEC) }
        defer { close(descriptor) }
        let header = WAVHeader.encode(format: format, dataByteCount: dataBytes)
        _ = try header.withRecordingBytes { raw throws(RecordingError) in
            try systemCheck("write", path: path) { pwrite(descriptor, raw.baseAddress, raw.count, 0) }
        }
        try systemCheck("ftruncate", path: path) { ftruncate(descriptor, off_t(headerBytes + dataBytes)) }
        try systemCheck("fsync", path: path) { fsync(descriptor) }
        return frames
    }
}
