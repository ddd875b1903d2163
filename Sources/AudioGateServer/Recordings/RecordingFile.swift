#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The one way the server opens, creates, renames and removes what is inside a recording's folder.
///
/// Whoever can write the data folder must not make the server read or write anything else: a path
/// is always `<recordings>/<id>/<name>`, and neither the recording's folder nor the file may be a
/// symbolic link (`O_NOFOLLOW` on both, the file opened relative to the folder's descriptor); only
/// regular files with a single name are used, so a FIFO cannot stall a thread and a hard link to
/// another file is refused. New folders are 0700 and new files 0600 whatever the umask.
enum RecordingFile {
    /// Mode of every file the server creates in the recordings folder.
    static let fileMode: mode_t = 0o600
    /// Mode of every folder the server creates for recordings.
    static let folderMode: mode_t = 0o700

    /// Opens the file at `path` with `flags` (`O_CREAT` makes it 0600); the descriptor is the
    /// caller's to close.
    static func open(_ path: String, _ flags: Int32) throws(RecordingError) -> Int32 {
        try inFolder(of: path) { folder, name throws(RecordingError) in
            // A FIFO would block the open itself; regular files ignore O_NONBLOCK. O_TRUNC waits
            // for the checks, so a file with another name is never cut.
            let descriptor = try check("open", path: path) {
                openat(folder, name, flags & ~O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, fileMode)
            }
            do throws(RecordingError) {
                var info = stat()
                try systemCheck("fstat", path: path) { fstat(descriptor, &info) }
                guard (info.st_mode & S_IFMT) == S_IFREG, info.st_nlink == 1 else {
                    throw RecordingError(.io, "refused: \(path) is not a regular file with one name")
                }
                if flags & O_CREAT != 0 {
                    try systemCheck("fchmod", path: path) { fchmod(descriptor, fileMode) }
                }
                if flags & O_TRUNC != 0 {
                    try systemCheck("ftruncate", path: path) { ftruncate(descriptor, 0) }
                }
            } catch {
                close(descriptor)
                throw error
            }
            return descriptor
        }
    }

    /// The whole file at `path`, refused when it holds more than `limit` bytes.
    static func read(_ path: String, limit: Int) throws(RecordingError) -> [UInt8] {
        let descriptor = try open(path, O_RDONLY)
        defer { close(descriptor) }
        var info = stat()
        try systemCheck("fstat", path: path) { fstat(descriptor, &info) }
        guard Int(info.st_size) <= limit else { throw RecordingError(.io, "refused: \(path) is over \(limit) bytes") }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var count = 0
        while count < bytes.count {
            let result: Result<Int, RecordingError> = bytes.withUnsafeMutableBytes { raw in
                do throws(RecordingError) {
                    return .success(try systemCheck("read", path: path) { pread(descriptor, raw.baseAddress! + count, raw.count - count, off_t(count)) })
                } catch {
                    return .failure(error)
                }
            }
            let read = try result.get()
            if read == 0 { break }
            count += read
        }
        return Array(bytes[0..<count])
    }

    /// Creates the folder at `path`, 0700 whatever the umask.
    static func makeFolder(_ path: String) throws(RecordingError) {
        try systemCheck("mkdir", path: path) { mkdir(path, folderMode) }
        let descriptor = try check("open", path: path) { openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        defer { close(descriptor) }
        try systemCheck("fchmod", path: path) { fchmod(descriptor, folderMode) }
    }

    /// Removes the file at `path` (never what a link there points at).
    static func remove(_ path: String) throws(RecordingError) {
        try inFolder(of: path) { folder, name throws(RecordingError) in
            _ = try systemCheck("unlink", path: path) { unlinkat(folder, name, 0) }
        }
    }

    /// Renames the file at `source` to `name` in the same folder, replacing what is there.
    static func rename(_ source: String, to name: String) throws(RecordingError) {
        try inFolder(of: source) { folder, from throws(RecordingError) in
            _ = try systemCheck("rename", path: source) { renameat(folder, from, folder, name) }
        }
    }

    /// Runs `body` with the descriptor of the folder `path` is in (itself no link) and the file's name.
    private static func inFolder<T>(of path: String, _ body: (Int32, String) throws(RecordingError) -> T) throws(RecordingError) -> T {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else {
            throw RecordingError(.io, "refused: \(path) is not inside a recording's folder")
        }
        let folderPath = String(path[..<slash])
        let name = String(path[path.index(after: slash)...])
        guard !name.isEmpty, name != ".", name != ".." else { throw RecordingError(.io, "refused: \(path) names no file") }
        let folder = try check("open", path: folderPath) { openat(AT_FDCWD, folderPath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        defer { close(folder) }
        return try body(folder, name)
    }

    /// `systemCheck`, naming a symbolic link for what it is.
    private static func check(_ call: String, path: String, _ body: () -> Int32) throws(RecordingError) -> Int32 {
        do throws(RecordingError) {
            return try systemCheck(call, path: path, body)
        } catch where error.systemError == ELOOP || error.systemError == ENOTDIR {
            throw RecordingError(
                .io, "refused: \(path) is a symbolic link, or its folder is not a plain folder", systemError: error.systemError)
        }
    }
}
