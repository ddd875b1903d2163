import Crypto

/// Noise's HandshakeState for the one pattern Sendspin uses, KKpsk2:
///
///     -> s
///     <- s
///     ...
///     -> e, es, ss
///     <- e, ee, se, psk
///
/// The server is the initiator, the player the responder. The PSK is mixed in only at the end of
/// message 2, so a responder may pick it after reading message 1 (its payload names it).
struct NoiseHandshake: Sendable {
    enum Role: Sendable { case initiator, responder }

    /// Longest Noise message (the specification's limit, handshake and transport alike).
    static let maximumMessageBytes = 65535
    static let keyBytes = 32

    let role: Role
    private var symmetric: NoiseSymmetricState
    private let staticKey: Curve25519.KeyAgreement.PrivateKey
    private let remoteStatic: Curve25519.KeyAgreement.PublicKey
    private var ephemeral: Curve25519.KeyAgreement.PrivateKey?
    private var remoteEphemeral: Curve25519.KeyAgreement.PublicKey?
    private var psk: [UInt8]?
    /// Messages processed: 0 before message 1, 2 once complete.
    private var step = 0

    /// A handshake between our `staticKey` and the peer's `remoteStatic` (32 raw bytes), bound to
    /// `prologue`. `ephemeral` is for the test vectors; a real handshake makes a fresh one.
    init(
        suite: NoiseCipherSuite, role: Role, staticKey: Curve25519.KeyAgreement.PrivateKey, remoteStatic: [UInt8],
        prologue: [UInt8], psk: [UInt8]? = nil, ephemeral: Curve25519.KeyAgreement.PrivateKey? = nil
    ) throws(SendspinError) {
        guard remoteStatic.count == Self.keyBytes, let remote = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: remoteStatic)
        else { throw SendspinError(.handshake, "the peer's static key is not 32 bytes") }
        self.role = role
        self.staticKey = staticKey
        self.remoteStatic = remote
        self.ephemeral = ephemeral
        symmetric = NoiseSymmetricState(suite: suite)
        symmetric.mixHash(prologue)
        // The pre-messages: the initiator's static key, then the responder's.
        let local = staticKey.publicKey.rawRepresentation
        let (initiator, responder) = role == .initiator ? (Array(local), remoteStatic) : (remoteStatic, Array(local))
        symmetric.mixHash(initiator)
        symmetric.mixHash(responder)
        if let psk { try setPSK(psk) }
    }

    /// Sets the PSK mixed in by message 2; a responder calls this after reading message 1.
    mutating func setPSK(_ psk: [UInt8]) throws(SendspinError) {
        guard psk.count == Self.keyBytes else { throw SendspinError(.handshake, "a PSK is 32 bytes, not \(psk.count)") }
        self.psk = psk
    }

    var isComplete: Bool { step == 2 }

    /// `h` once complete: both sides hold the same value.
    var handshakeHash: [UInt8] { symmetric.hash }

    /// Writes the next message (ours by role and step) carrying `payload`.
    mutating func writeMessage(_ payload: [UInt8]) throws(SendspinError) -> [UInt8] {
        guard (step == 0 && role == .initiator) || (step == 1 && role == .responder) else {
            throw SendspinError(.handshake, "not this side's turn to write a handshake message")
        }
        let key = ephemeral ?? Curve25519.KeyAgreement.PrivateKey()
        ephemeral = key
        let ephemeralPublic = Array(key.publicKey.rawRepresentation)
        var message = ephemeralPublic
        symmetric.mixHash(ephemeralPublic)
        symmetric.mixKey(ephemeralPublic)
        try mixTokens()
        message += try symmetric.encryptAndHash(payload)
        guard message.count <= Self.maximumMessageBytes else {
            throw SendspinError(.handshake, "a handshake payload of \(payload.count) bytes is too long")
        }
        step += 1
        return message
    }

    /// Reads the peer's next message and returns its payload; throws when it does not authenticate.
    mutating func readMessage(_ message: [UInt8]) throws(SendspinError) -> [UInt8] {
        guard (step == 0 && role == .responder) || (step == 1 && role == .initiator) else {
            throw SendspinError(.handshake, "not the peer's turn to send a handshake message")
        }
        guard message.count <= Self.maximumMessageBytes, message.count >= Self.keyBytes + NoiseCipherSuite.tagBytes else {
            throw SendspinError(.handshake, "a handshake message of \(message.count) bytes")
        }
        let ephemeralPublic = Array(message[0..<Self.keyBytes])
        guard let remote = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: ephemeralPublic) else {
            throw SendspinError(.handshake, "the peer's ephemeral key does not parse")
        }
        remoteEphemeral = remote
        symmetric.mixHash(ephemeralPublic)
        symmetric.mixKey(ephemeralPublic)
        try mixTokens()
        let payload = try symmetric.decryptAndHash(message[Self.keyBytes...])
        step += 1
        return payload
    }

    /// The DH tokens after `e`: `es, ss` in message 1, `ee, se, psk` in message 2.
    private mutating func mixTokens() throws(SendspinError) {
        if step == 0 {
            // es: the initiator's e with the responder's s; then ss.
            if role == .initiator {
                symmetric.mixKey(try Self.dh(try ephemeralKey(), remoteStatic))
            } else {
                symmetric.mixKey(try Self.dh(staticKey, try remoteEphemeralKey()))
            }
            symmetric.mixKey(try Self.dh(staticKey, remoteStatic))
        } else {
            let remoteE = try remoteEphemeralKey()
            // ee, then se: the initiator's s with the responder's e.
            symmetric.mixKey(try Self.dh(try ephemeralKey(), remoteE))
            if role == .initiator {
                symmetric.mixKey(try Self.dh(staticKey, remoteE))
            } else {
                symmetric.mixKey(try Self.dh(try ephemeralKey(), remoteStatic))
            }
            guard let psk else { throw SendspinError(.handshake, "message 2 needs the PSK") }
            symmetric.mixKeyAndHash(psk)
        }
    }

    private func ephemeralKey() throws(SendspinError) -> Curve25519.KeyAgreement.PrivateKey {
        guard let ephemeral else { throw SendspinError(.handshake, "no ephemeral key") }
        return ephemeral
    }

    private func remoteEphemeralKey() throws(SendspinError) -> Curve25519.KeyAgreement.PublicKey {
        guard let remoteEphemeral else { throw SendspinError(.handshake, "no ephemeral key from the peer") }
        return remoteEphemeral
    }

    /// The transport ciphers once complete: (sending, receiving) for this side.
    func split() throws(SendspinError) -> NoiseTransport {
        guard isComplete else { throw SendspinError(.handshake, "the handshake is not complete") }
        let (initiatorToResponder, responderToInitiator) = symmetric.split()
        return role == .initiator
            ? NoiseTransport(send: initiatorToResponder, receive: responderToInitiator, handshakeHash: symmetric.hash)
            : NoiseTransport(send: responderToInitiator, receive: initiatorToResponder, handshakeHash: symmetric.hash)
    }

    /// X25519; a peer key of low order (an all-zero result) fails the handshake.
    private static func dh(_ key: Curve25519.KeyAgreement.PrivateKey, _ peer: Curve25519.KeyAgreement.PublicKey) throws(SendspinError) -> [UInt8] {
        guard let shared = key.agreement(with: Array(peer.rawRepresentation)) else {
            throw SendspinError(.handshake, "X25519 with the peer's key gave no secret (a key of low order)")
        }
        return shared
    }
}

/// The two transport ciphers a completed handshake gives, and its hash.
struct NoiseTransport: Sendable {
    var send: NoiseCipherState
    var receive: NoiseCipherState
    let handshakeHash: [UInt8]
}
