import Crypto

extension Curve25519.KeyAgreement.PrivateKey {
    /// X25519 with `peer`'s 32 bytes, or nil when they are no key or a point of low order: such a
    /// point makes every result the identity (all zeros), which swift-crypto returns rather than
    /// refuses, and a secret anyone can compute keys nothing.
    func agreement(with peer: [UInt8]) -> [UInt8]? {
        guard let key = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: peer),
            let secret = try? sharedSecretFromKeyAgreement(with: key)
        else { return nil }
        let bytes = secret.withUnsafeBytes { Array($0) }
        return bytes.contains { $0 != 0 } ? bytes : nil
    }
}
