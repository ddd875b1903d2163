#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A read-only file descriptor, closed when the last reference goes.
final class FileDescriptorBox: Sendable {
    let descriptor: Int32
    let path: String

    /// A file of a recording's folder, opened as `RecordingFile` allows (never through a link).
    init(path: String) throws(RecordingError) {
        self.path = path
        do throws(RecordingError) {
            descriptor = try RecordingFile.open(path, O_RDONLY)
        } catch where error.systemError == ENOENT {
            throw RecordingError(.notFound, "the segment file is gone")
        } catch {
            throw RecordingError(.io, error.message)
        }
    }

    /// A temporary file the server made itself (an export being sent), outside the recordings.
    init(temporary path: String) throws {
        self.path = path
        descriptor = try systemCheck("open", path: path) { open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
    }

    deinit { close(descriptor) }

    /// Up to `count` bytes from `offset` (fewer at the end of the file).
    func read(_ count: Int, at offset: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let read = try bytes.withUnsafeMutableBytes { raw in
            try systemCheck("read", path: path) { pread(descriptor, raw.baseAddress, count, off_t(offset)) }
        }
        bytes.removeSubrange(read...)
        return bytes
    }
}
