import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The recordings directory: one folder per recording holding `recording.json` and its segments.
///
/// All methods do blocking file I/O: call them from a thread pool, never the cooperative pool.
struct RecordingStore: Sendable {
    /// Name of the metadata file in each recording's folder.
    static let metadataFile = "recording.json"

    /// `<data dir>/recordings`.
    let root: String
    let logger: Logger

    /// Uses `<dataDirectory>/recordings`, creating it (owner-only) if needed.
    init(dataDirectory: String, logger: Logger) throws(RecordingError) {
        root = ServerConfiguration.path("recordings", in: dataDirectory)
        self.logger = logger
        do {
            try FileManager.default.createDirectory(
                atPath: root, withIntermediateDirectories: true, attributes: [.posixPermissions: RecordingFile.folderMode])
        } catch {
            throw RecordingError(.io, "cannot create \(root): \((error as NSError).localizedDescription)")
        }
        // Owner-only whatever the umask or an older version made; a folder of another user keeps
        // its mode, and the check below says whether it can be used.
        chmod(root, RecordingFile.folderMode)
        guard access(root, W_OK | X_OK) == 0 else { throw RecordingError.system("access", path: root) }
    }

    /// The folder of a recording (the id is validated by the caller).
    func directory(of id: String) -> String { root + "/" + id }

    /// The path of a segment file.
    func path(of id: String, file: String) -> String { directory(of: id) + "/" + file }

    /// File name of segment `index`: the only segment names the server makes, and the only ones it
    /// accepts from a `recording.json`.
    static func segmentFile(_ index: Int, codec: RecordingCodec = .wav) -> String {
        String(format: "segment-%05d.", index) + codec.fileExtension
    }

    /// Creates a recording's folder.
    func create(_ id: String) throws(RecordingError) {
        try RecordingFile.makeFolder(directory(of: id))
    }

    /// Name of the preallocated file a running recording keeps, so its final state can be saved on a full disk.
    static let reserveFile = "recording.json.reserve"
    /// Room for the metadata of a recording with hundreds of segments.
    static let reserveBytes = 64 << 10

    /// Sets aside disk space for the recording's last metadata save.
    func reserve(_ id: String) throws(RecordingError) {
        let file = path(of: id, file: Self.reserveFile)
        let descriptor = try RecordingFile.open(file, O_WRONLY | O_CREAT)
        defer { close(descriptor) }
        let result = posix_fallocate(descriptor, 0, off_t(Self.reserveBytes))
        guard result == 0 else { throw RecordingError.system("posix_fallocate", path: file, errno: result) }
    }

    /// Gives the reserved space back (a finished recording saves no more).
    func release(_ id: String) {
        try? RecordingFile.remove(path(of: id, file: Self.reserveFile))
    }

    /// Replaces `recording.json` atomically (temporary file, fsync, rename), so a crash leaves
    /// either the old or the new version. On a full disk the recording's reserve is given up for it,
    /// so the last state (`failed: no_space`) still reaches the disk.
    func save(_ info: RecordingInfo) throws(RecordingError) {
        do {
            try writeMetadata(info)
        } catch where error.code == .noSpace && (try? RecordingFile.remove(path(of: info.id, file: Self.reserveFile))) != nil {
            try writeMetadata(info)
        }
    }

    private func writeMetadata(_ info: RecordingInfo) throws(RecordingError) {
        let data: Data
        do {
            data = try Self.encoder.encode(info)
        } catch {
            throw RecordingError(.io, "cannot encode the metadata of \(info.id)")
        }
        let final = path(of: info.id, file: Self.metadataFile)
        let temporary = final + ".tmp"
        let descriptor = try RecordingFile.open(temporary, O_WRONLY | O_CREAT | O_TRUNC)
        defer { close(descriptor) }
        try [UInt8](data).withRecordingBytes { raw throws(RecordingError) in
            var offset = 0
            while offset < raw.count {
                offset += try systemCheck("write", path: temporary) {
                    write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                }
            }
        }
        try systemCheck("fsync", path: temporary) { fsync(descriptor) }
        try RecordingFile.rename(temporary, to: Self.metadataFile)
    }

    /// Prefix of a folder on its way out; not a valid recording id, so never listed.
    static let detachedPrefix = ".removing-"

    /// Removes a recording's folder and everything in it; answers the bytes freed.
    @discardableResult
    func remove(_ id: String) -> Int {
        detach(id).map(purge) ?? 0
    }

    /// Moves a recording's folder out of the listing in one atomic rename; answers its new path,
    /// or nil when it could not be moved.
    func detach(_ id: String) -> String? {
        let detached = root + "/" + Self.detachedPrefix + id
        guard rename(directory(of: id), detached) == 0 else {
            logger.warning("could not remove recording \(id): \(String(cString: strerror(errno)))")
            return nil
        }
        return detached
    }

    /// Deletes a detached folder; answers the bytes freed.
    func purge(_ detached: String) -> Int {
        let bytes = Self.size(ofDirectory: detached)
        do {
            try FileManager.default.removeItem(atPath: detached)
        } catch {
            logger.warning("could not delete \(detached): \((error as NSError).localizedDescription)")
        }
        return bytes
    }

    /// Bytes of the regular files directly inside a folder.
    static func size(ofDirectory path: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.reduce(0) { total, name in
            var info = stat()
            guard lstat(path + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return total }
            return total + Int(info.st_size)
        }
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }()
}
