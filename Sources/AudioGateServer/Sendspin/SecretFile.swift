import Foundation

/// A small owner-only file of the player's secrets in the data directory (its key, its PSKs).
enum SecretFile {
    static let fileMode: mode_t = 0o600

    /// The file's text without surrounding white space; nil when there is no such file.
    static func read(_ path: String) throws(SendspinError) -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw SendspinError(.key, "cannot read \(path)")
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stores `text` and a newline to `path` (owner-only), making its folder (owner-only) when missing.
    static func store(_ text: String, at path: String) throws(SendspinError) {
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw SendspinError(.key, "cannot create \(directory): \((error as NSError).localizedDescription)")
        }
        let bytes = Array((text + "\n").utf8)
        // Written beside and renamed, so a crash never leaves half a secret under the real name.
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, fileMode)
        guard fd >= 0 else { throw SendspinError(.key, "cannot create \(temporary): \(String(cString: strerror(errno)))") }
        fchmod(fd, fileMode)
        // Made by root for a service's folder (`sudo audiogate sendspin-token`): the file is the
        // folder owner's, or the service could not read it.
        var folder = stat()
        if geteuid() == 0, stat(directory, &folder) == 0, folder.st_uid != 0 {
            _ = fchown(fd, folder.st_uid, folder.st_gid)
        }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw SendspinError(.key, "cannot write \(path): \(reason)")
        }
    }
}
