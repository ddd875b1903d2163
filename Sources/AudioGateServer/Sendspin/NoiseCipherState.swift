import Crypto

/// Noise's CipherState: a key (or none yet) and the counter that is each message's nonce.
struct NoiseCipherState: Sendable {
    let suite: NoiseCipherSuite
    private(set) var key: SymmetricKey?
    private(set) var nonce: UInt64 = 0

    init(suite: NoiseCipherSuite, key: [UInt8]? = nil) {
        self.suite = suite
        self.key = key.map { SymmetricKey(data: $0) }
    }

    /// `InitializeKey`: a new key, counting from zero.
    mutating func initializeKey(_ bytes: [UInt8]) {
        key = SymmetricKey(data: bytes)
        nonce = 0
    }

    var hasKey: Bool { key != nil }

    /// `EncryptWithAd`: the plaintext as it is while there is no key.
    mutating func encrypt(ad: [UInt8], _ plaintext: [UInt8]) throws(SendspinError) -> [UInt8] {
        guard let key else { return plaintext }
        try checkNonce()
        let ciphertext = try suite.encrypt(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
        nonce += 1
        return ciphertext
    }

    /// `DecryptWithAd`; the counter moves only when the message authenticates.
    mutating func decrypt(ad: [UInt8], _ ciphertext: ArraySlice<UInt8>) throws(SendspinError) -> [UInt8] {
        guard let key else { return Array(ciphertext) }
        try checkNonce()
        let plaintext = try suite.decrypt(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext)
        nonce += 1
        return plaintext
    }

    /// 2^64-1 is reserved: a session that used every other nonce must end.
    private func checkNonce() throws(SendspinError) {
        guard nonce < .max else { throw SendspinError(.decrypt, "the Noise nonce is exhausted") }
    }
}
