import Crypto
import Foundation

/// The player's static X25519 key: made once and kept in `<data dir>/sendspin-key` (owner-only),
/// so a server knows this player across restarts. Its public half, base64url, is the `client_id`.
struct SendspinIdentity: Sendable {
    static let fileName = "sendspin-key"
    static let fileMode: mode_t = 0o600

    let privateKey: Curve25519.KeyAgreement.PrivateKey

    /// The `client_id`: the public key, 43 characters of unpadded base64url.
    var clientID: String { Base64URL.encode(Array(privateKey.publicKey.rawRepresentation)) }

    /// The key in `directory`, made (and the folder with it, owner-only) when there is none yet.
    static func loadOrCreate(directory: String) throws(SendspinError) -> SendspinIdentity {
        let path = ServerConfiguration.path(fileName, in: directory)
        if FileManager.default.fileExists(atPath: path) {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw SendspinError(.key, "cannot read \(path)")
            }
            guard let raw = Base64URL.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)), raw.count == 32,
                let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: raw)
            else { throw SendspinError(.key, "\(path) does not hold a key; remove it to make a new one") }
            return SendspinIdentity(privateKey: key)
        }
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw SendspinError(.key, "cannot create \(directory): \((error as NSError).localizedDescription)")
        }
        let key = Curve25519.KeyAgreement.PrivateKey()
        let bytes = Array((Base64URL.encode(Array(key.rawRepresentation)) + "\n").utf8)
        // Written beside and renamed, so a crash never leaves half a key under the real name.
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, fileMode)
        guard fd >= 0 else { throw SendspinError(.key, "cannot create \(temporary): \(String(cString: strerror(errno)))") }
        fchmod(fd, fileMode)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw SendspinError(.key, "cannot write \(path): \(reason)")
        }
        return SendspinIdentity(privateKey: key)
    }
}

/// Unpadded base64url (RFC 4648 section 5), as Sendspin's identities and handshake messages use it.
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Nil when `text` is not base64url (padding is tolerated).
    static func decode(_ text: String) -> [UInt8]? {
        guard !text.contains("+"), !text.contains("/") else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
