import Crypto

/// Noise's SymmetricState over SHA-256: the chaining key, the handshake hash and the cipher they key.
struct NoiseSymmetricState: Sendable {
    static let hashBytes = 32

    private(set) var chainingKey: [UInt8]
    /// `h`: the hash of everything the handshake has seen.
    private(set) var hash: [UInt8]
    private(set) var cipher: NoiseCipherState

    /// `InitializeSymmetric(protocol_name)`.
    init(suite: NoiseCipherSuite) {
        let name = Array(suite.protocolName.utf8)
        hash = name.count <= Self.hashBytes ? name + [UInt8](repeating: 0, count: Self.hashBytes - name.count) : Array(SHA256.hash(data: name))
        chainingKey = hash
        cipher = NoiseCipherState(suite: suite)
    }

    mutating func mixKey(_ input: [UInt8]) {
        let output = Self.hkdf(chainingKey: chainingKey, input: input, outputs: 2)
        chainingKey = output[0]
        cipher.initializeKey(output[1])
    }

    mutating func mixHash(_ data: [UInt8]) {
        hash = Array(SHA256.hash(data: hash + data))
    }

    mutating func mixKeyAndHash(_ input: [UInt8]) {
        let output = Self.hkdf(chainingKey: chainingKey, input: input, outputs: 3)
        chainingKey = output[0]
        mixHash(output[1])
        cipher.initializeKey(output[2])
    }

    mutating func encryptAndHash(_ plaintext: [UInt8]) throws(SendspinError) -> [UInt8] {
        let ciphertext = try cipher.encrypt(ad: hash, plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    mutating func decryptAndHash(_ ciphertext: ArraySlice<UInt8>) throws(SendspinError) -> [UInt8] {
        let plaintext = try cipher.decrypt(ad: hash, ciphertext)
        mixHash(Array(ciphertext))
        return plaintext
    }

    /// `Split()`: the initiator's sending cipher, then the responder's.
    func split() -> (NoiseCipherState, NoiseCipherState) {
        let output = Self.hkdf(chainingKey: chainingKey, input: [], outputs: 2)
        return (NoiseCipherState(suite: cipher.suite, key: output[0]), NoiseCipherState(suite: cipher.suite, key: output[1]))
    }

    /// Noise's `HKDF(chaining_key, input_key_material, n)`: RFC 5869 with the chaining key as salt and no info.
    static func hkdf(chainingKey: [UInt8], input: [UInt8], outputs: Int) -> [[UInt8]] {
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: input), salt: chainingKey, info: [UInt8](), outputByteCount: outputs * hashBytes)
        let bytes = key.withUnsafeBytes { Array($0) }
        return (0..<outputs).map { Array(bytes[($0 * hashBytes)..<(($0 + 1) * hashBytes)]) }
    }
}
