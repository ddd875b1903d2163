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
        root = (dataDirectory.hasSuffix("/") ? String(dataDirectory.dropLast()) : dataDirectory) + "/recordings"
        self.logger = logger
        do {
            try FileManager.default.createDirectory(
                atPath: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o750])
        } catch {
            throw RecordingError(.io, "cannot create \(root): \((error as NSError).localizedDescription)")
        }
        guard access(root, W_OK | X_OK) == 0 else { throw RecordingError.system("access", path: root) }
    }

    /// The folder of a recording (the id is validated by the caller).
    func directory(of id: String) -> String { root + "/" + id }

    /// The path of a segment file.
    func path(of id: String, file: String) -> String { directory(of: id) + "/" + file }

    /// File name of segment `index`.
    static func segmentFile(_ index: Int) -> String { String(format: "segment-%05d.wav", index) }

    /// Creates a recording's folder.
    func create(_ id: String) throws(RecordingError) {
        let path = directory(of: id)
        try systemCheck("mkdir", path: path) { mkdir(path, 0o750) }
    }

    /// Replaces `recording.json` atomically (temporary file, fsync, rename), so a crash leaves
    /// either the old or the new version.
    func save(_ info: RecordingInfo) throws(RecordingError) {
        let data: Data
        do {
            data = try Self.encoder.encode(info)
        } catch {
            throw RecordingError(.io, "cannot encode the metadata of \(info.id)")
        }
        let final = path(of: info.id, file: Self.metadataFile)
        let temporary = final + ".tmp"
        let descriptor = try systemCheck("open", path: temporary) {
            open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        }
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
        try systemCheck("rename", path: final) { rename(temporary, final) }
    }

    /// Removes a recording's folder and everything in it; answers the bytes freed.
    @discardableResult
    func remove(_ id: String) -> Int {
        let path = directory(of: id)
        let bytes = Self.size(ofDirectory: path)
        do {
            try FileManager.default.removeItem(atPath: path)
        } catch {
            logger.warning("could not remove recording \(id): \((error as NSError).localizedDescription)")
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
