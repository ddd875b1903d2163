#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A read-only file descriptor, closed when the last reference goes.
final class FileDescriptorBox: Sendable {
    let descriptor: Int32
    let path: String

    init(path: String) throws {
        self.path = path
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw APIError(.notFound, "the segment file is gone") }
        self.descriptor = descriptor
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
