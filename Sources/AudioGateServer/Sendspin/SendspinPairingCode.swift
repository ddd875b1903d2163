import Crypto

/// The static pairing-code method: the operator types the player's 8-digit code into the server
/// while a pairing window is open on the player; both run CPace on it, confirm, and the player sends
/// its new long-term PSK wrapped under a key only a matching code gives.
enum SendspinPairingCode {
    /// Digits of a static pairing code.
    static let digits = 8
    static let sidLabel = Array("sendspin-pair-pake-v1".utf8)
    static let pskWrapLabel = Array("sendspin-pair-psk-wrap-v1".utf8)
    /// CPace's associated data: the server runs as the initiator.
    static let serverAD = Array("server".utf8)
    static let clientAD = Array("client".utf8)

    /// Whether `code` is a static pairing code: exactly 8 ASCII digits.
    static func isValid(_ code: String) -> Bool {
        code.utf8.count == digits && code.utf8.allSatisfy { (0x30...0x39).contains($0) }
    }

    /// The CPace session id: the label, the Noise handshake hash, the attempt and the round (big-endian).
    static func sid(handshakeHash: [UInt8], pairingIndex: Int, round: Int = 1) -> [UInt8] {
        sidLabel + handshakeHash + bigEndian(UInt32(truncatingIfNeeded: pairingIndex)) + bigEndian(UInt32(truncatingIfNeeded: round))
    }

    /// A key of its own for each wrapped field: SHA-256 over the label, the session id and the ISK.
    static func wrapKey(label: [UInt8], sid: [UInt8], isk: [UInt8]) -> [UInt8] {
        SHA256Bytes.of(label + sid + isk)
    }

    /// The negotiated suite's AEAD under `key` with a zero nonce (each key wraps one field once):
    /// ciphertext, then tag.
    static func wrap(_ secret: [UInt8], key: [UInt8], suite: NoiseCipherSuite) throws(SendspinError) -> [UInt8] {
        let symmetric = SymmetricKey(data: key)
        let zero = [UInt8](repeating: 0, count: 12)
        do {
            switch suite {
            case .chaChaPoly:
                let box = try ChaChaPoly.seal(secret, using: symmetric, nonce: ChaChaPoly.Nonce(data: zero))
                return Array(box.ciphertext) + Array(box.tag)
            case .aesGCM:
                let box = try AES.GCM.seal(secret, using: symmetric, nonce: AES.GCM.Nonce(data: zero))
                return Array(box.ciphertext) + Array(box.tag)
            }
        } catch {
            throw SendspinError(.pairing, "wrapping the long-term PSK failed: \(error)")
        }
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
