import Crypto
import Foundation

/// The player's secrets: its static X25519 key, made once and kept in `<data dir>/sendspin-key`
/// (owner-only) so a server knows this player across restarts, and its pairing trust. The key's
/// public half, base64url, is the `client_id`.
struct SendspinIdentity: Sendable {
    static let fileName = "sendspin-key"

    let privateKey: Curve25519.KeyAgreement.PrivateKey
    let trust: SendspinTrustStore

    /// The `client_id`: the public key, 43 characters of unpadded base64url.
    var clientID: String { Base64URL.encode(Array(privateKey.publicKey.rawRepresentation)) }

    /// The pairing token an operator gives a server that requires pairing.
    var pairingToken: String { SendspinTrustStore.token(clientID: clientID, pairingPSK: trust.pairingPSK) }

    /// The key and trust in `directory`, made (and the folder with them, owner-only) when there are none yet.
    static func loadOrCreate(directory: String) throws(SendspinError) -> SendspinIdentity {
        let path = ServerConfiguration.path(fileName, in: directory)
        let key: Curve25519.KeyAgreement.PrivateKey
        if let text = try SecretFile.read(path) {
            guard let raw = Base64URL.decode(text), raw.count == 32,
                let stored = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: raw)
            else { throw SendspinError(.key, "\(path) does not hold a key; remove it to make a new one") }
            key = stored
        } else {
            key = Curve25519.KeyAgreement.PrivateKey()
            try SecretFile.store(Base64URL.encode(Array(key.rawRepresentation)), at: path)
        }
        return SendspinIdentity(privateKey: key, trust: try SendspinTrustStore.loadOrCreate(directory: directory))
    }
}

/// The pairing token of the Sendspin player whose secrets are in a data directory.
public enum SendspinPairing {
    /// `SP:0…`: the player's `client_id` and Pairing PSK, made on first use.
    public static func token(dataDirectory: String) throws -> String {
        try SendspinIdentity.loadOrCreate(directory: dataDirectory).pairingToken
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
