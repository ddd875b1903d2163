import Crypto
import Foundation

/// The two cipher suites of Sendspin's `Noise_KKpsk2_25519_*_SHA256`: the AEAD is their only difference.
public enum NoiseCipherSuite: String, Sendable, CaseIterable {
    case chaChaPoly = "25519_ChaChaPoly_SHA256"
    case aesGCM = "25519_AESGCM_SHA256"

    /// The full Noise protocol name, hashed into the handshake's first state.
    public var protocolName: String { "Noise_KKpsk2_" + rawValue }

    /// Bytes of the authentication tag after each ciphertext.
    static let tagBytes = 16

    /// `ENCRYPT(k, n, ad, plaintext)`: ciphertext followed by the tag.
    func encrypt(key: SymmetricKey, nonce: UInt64, ad: [UInt8], plaintext: [UInt8]) throws(SendspinError) -> [UInt8] {
        do {
            switch self {
            case .chaChaPoly:
                let box = try ChaChaPoly.seal(plaintext, using: key, nonce: ChaChaPoly.Nonce(data: nonceBytes(nonce)), authenticating: ad)
                return Array(box.ciphertext) + Array(box.tag)
            case .aesGCM:
                let box = try AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(data: nonceBytes(nonce)), authenticating: ad)
                return Array(box.ciphertext) + Array(box.tag)
            }
        } catch {
            throw SendspinError(.handshake, "\(rawValue) encryption failed: \(error)")
        }
    }

    /// `DECRYPT(k, n, ad, ciphertext)`; throws `.decrypt` when the tag does not authenticate.
    func decrypt(key: SymmetricKey, nonce: UInt64, ad: [UInt8], ciphertext: ArraySlice<UInt8>) throws(SendspinError) -> [UInt8] {
        guard ciphertext.count >= Self.tagBytes else {
            throw SendspinError(.decrypt, "a ciphertext of \(ciphertext.count) bytes is shorter than its tag")
        }
        let body = ciphertext.dropLast(Self.tagBytes)
        let tag = ciphertext.suffix(Self.tagBytes)
        do {
            switch self {
            case .chaChaPoly:
                let box = try ChaChaPoly.SealedBox(nonce: ChaChaPoly.Nonce(data: nonceBytes(nonce)), ciphertext: body, tag: tag)
                return Array(try ChaChaPoly.open(box, using: key, authenticating: ad))
            case .aesGCM:
                let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonceBytes(nonce)), ciphertext: body, tag: tag)
                return Array(try AES.GCM.open(box, using: key, authenticating: ad))
            }
        } catch {
            throw SendspinError(.decrypt, "a message did not authenticate")
        }
    }

    /// The 96-bit nonce: 32 zero bits, then the counter little-endian (ChaChaPoly) or big-endian (AES-GCM).
    private func nonceBytes(_ n: UInt64) -> [UInt8] {
        let counter = (0..<8).map { UInt8(truncatingIfNeeded: n >> (8 * $0)) }
        return [0, 0, 0, 0] + (self == .chaChaPoly ? counter : counter.reversed())
    }
}
