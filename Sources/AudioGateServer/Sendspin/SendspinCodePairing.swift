/// One connection's pairing-code attempt, the static code's and the dynamic code's, as a state
/// machine: each transition takes what the server sent and returns what to send back, which the
/// session carries out with the player-wide pairing window and round count.
///
/// Static: `client/pair-init`, then CPace on the 8 digits (`server/pair-auth` / `client/pair-auth`,
/// `server/pair-confirm` / `client/pair-confirm`), then the wrapped long-term PSK. Dynamic: the
/// player commits to a nonce in `client/pair-init`; the server's nonce in `server/pair-init` gives
/// both the 6 digits the player shows and the server's operator types in; a wrong code is retried
/// (`client/pair-retry`, a new CPace round on the same code) until the round limit.
struct SendspinCodePairing {
    /// The dynamic code's nonce, its digits and the round being run.
    struct Dynamic: Equatable {
        var nonceB: [UInt8]
        var code: String
        var round: Int
    }

    enum State {
        case idle
        /// Dynamic: the commitment went out; the server's nonce comes next.
        case committed(nonceB: [UInt8])
        /// The server's CPace share comes next.
        case awaitingShare(sid: [UInt8], prs: [UInt8], dynamic: Dynamic?)
        /// The server's confirmation tag comes next.
        case confirming(sid: [UInt8], keys: SendspinCPace.Keys, dynamic: Dynamic?)
        /// Dynamic: a round failed and `client/pair-retry` went out; the server's next init comes next.
        case retrying(Dynamic)
    }

    /// What a confirmation from the server leads to.
    enum Confirmation {
        /// The codes matched: `client/pair-confirm` and `client/pair-finalize`, and the PSK they carry.
        case paired(messages: [String], psk: [UInt8])
        /// The dynamic code did not match this round: `client/pair-retry`.
        case retry(String)
        /// The code did not match and no round is left: `pair/abort`.
        case mismatch(String)
    }

    static let commitLabel = Array("sendspin-pair-commit-v1".utf8)
    static let deriveLabel = Array("sendspin-pairing-code-derive-v1".utf8)
    static let nonceWrapLabel = Array("sendspin-pair-nonce-wrap-v1".utf8)
    static let nonceBytes = 32
    /// Digits of a dynamic pairing code.
    static let dynamicDigits = 6

    /// The handshake the attempt is bound to.
    let handshakeHash: [UInt8]
    private(set) var state = State.idle
    private var pairingIndex = 0

    init(handshakeHash: [UInt8]) {
        self.handshakeHash = handshakeHash
    }

    /// Whether the attempt runs on the static code, which only an open pairing window admits.
    var isStatic: Bool {
        switch state {
        case .awaitingShare(_, _, let dynamic), .confirming(_, _, let dynamic): dynamic == nil
        default: false
        }
    }

    /// Ends any attempt.
    mutating func reset() {
        state = .idle
    }

    /// A static-code activation: CPace on `code` once the server's share arrives.
    mutating func beginStatic(pairingIndex: Int, code: String) {
        self.pairingIndex = pairingIndex
        state = .awaitingShare(
            sid: SendspinPairingCode.sid(handshakeHash: handshakeHash, pairingIndex: pairingIndex), prs: Array(code.utf8), dynamic: nil)
    }

    /// A dynamic-code activation: the `client/pair-init` committing to a fresh nonce.
    mutating func beginDynamic(pairingIndex: Int, nonce: [UInt8] = SendspinTrustStore.randomKey()) -> String {
        self.pairingIndex = pairingIndex
        state = .committed(nonceB: nonce)
        return SendspinOutbound.pairInit(pairingIndex: pairingIndex, commit: SHA256Bytes.of(Self.commitLabel + nonce))
    }

    /// `server/pair-init`: the first carries the server's nonce, which gives the code; each later
    /// one starts the next round on the same code. Returns the round to show the code for.
    mutating func serverInit(nonceA: [UInt8]?) throws(SendspinError) -> Dynamic {
        var dynamic: Dynamic
        switch state {
        case .committed(let nonceB):
            guard let nonceA, nonceA.count == Self.nonceBytes else {
                throw SendspinError(.pairing, "the first server/pair-init has no 32-byte nonce_A")
            }
            dynamic = Dynamic(nonceB: nonceB, code: Self.digits(handshakeHash: handshakeHash, nonceA: nonceA, nonceB: nonceB), round: 1)
        case .retrying(let previous):
            guard nonceA == nil else { throw SendspinError(.pairing, "server/pair-init carries nonce_A after the first round") }
            dynamic = previous
            dynamic.round += 1
        default:
            throw SendspinError(.pairing, "server/pair-init outside a dynamic pairing-code attempt")
        }
        state = .awaitingShare(
            sid: SendspinPairingCode.sid(handshakeHash: handshakeHash, pairingIndex: pairingIndex, round: dynamic.round),
            prs: Array(dynamic.code.utf8), dynamic: dynamic)
        return dynamic
    }

    /// `server/pair-auth`: this player's `client/pair-auth`, its share of the code.
    mutating func serverShare(_ share: [UInt8]) throws(SendspinError) -> String {
        guard case .awaitingShare(let sid, let prs, let dynamic) = state else {
            throw SendspinError(.pairing, "server/pair-auth outside a pairing-code attempt")
        }
        let cpace = try SendspinCPace(initiator: false, prs: prs, sid: sid, ad: SendspinPairingCode.clientAD)
        state = .confirming(sid: sid, keys: try cpace.derive(peerShare: share, peerAD: SendspinPairingCode.serverAD), dynamic: dynamic)
        return SendspinOutbound.pairAuth(share: cpace.publicShare)
    }

    /// `server/pair-confirm`: a server that proves the code gets this player's tag (and, dynamic,
    /// its nonce) and a fresh long-term PSK, each wrapped under a key of the code's; a wrong
    /// dynamic code is retried while `mayRetry`.
    mutating func serverConfirm(_ tag: [UInt8], suite: NoiseCipherSuite, mayRetry: Bool) throws(SendspinError) -> Confirmation {
        guard case .confirming(let sid, let keys, let dynamic) = state else {
            throw SendspinError(.pairing, "server/pair-confirm outside a pairing-code attempt")
        }
        guard keys.verify(tag) else {
            if let dynamic, mayRetry {
                state = .retrying(dynamic)
                return .retry(SendspinOutbound.pairRetry())
            }
            state = .idle
            return .mismatch(SendspinOutbound.pairAbort("pairing_code_mismatch"))
        }
        state = .idle
        let wrappedNonce = try dynamic.map { dynamic throws(SendspinError) in
            try SendspinPairingCode.wrap(
                dynamic.nonceB, key: SendspinPairingCode.wrapKey(label: Self.nonceWrapLabel, sid: sid, isk: keys.isk), suite: suite)
        }
        let psk = SendspinTrustStore.randomKey()
        let wrappedPSK = try SendspinPairingCode.wrap(
            psk, key: SendspinPairingCode.wrapKey(label: SendspinPairingCode.pskWrapLabel, sid: sid, isk: keys.isk), suite: suite)
        return .paired(
            messages: [
                SendspinOutbound.pairConfirm(tag: keys.tag, wrappedNonce: wrappedNonce),
                SendspinOutbound.pairFinalize(wrappedPSK: wrappedPSK),
            ], psk: psk)
    }

    /// The six digits: SHA-256 over the label, the handshake hash and both nonces, as a big-endian
    /// number, modulo 10^6.
    static func digits(handshakeHash: [UInt8], nonceA: [UInt8], nonceB: [UInt8]) -> String {
        let digest = SHA256Bytes.of(deriveLabel + handshakeHash + nonceA + nonceB)
        let value = digest.reduce(0) { ($0 * 256 + Int($1)) % 1_000_000 }
        let text = String(value)
        return String(repeating: "0", count: dynamicDigits - text.count) + text
    }
}
