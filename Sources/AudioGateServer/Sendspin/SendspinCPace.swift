import CSodium
import Crypto

/// One side of CPace (draft-irtf-cfrg-cpace, CPACE-X25519-SHA512), the balanced PAKE the
/// Sendspin pairing-code methods run over the encrypted channel: both sides turn the code into a
/// point (Elligator2 onto Curve25519), exchange a secret multiple of it, and get the same
/// intermediate session key only when they hold the same code.
struct SendspinCPace {
    static let shareBytes = 32
    static let tagBytes = 64

    /// The session id, bound to the Noise handshake and the attempt.
    let sid: [UInt8]
    /// This side's associated data (`server` for the initiator, `client` for the responder).
    let ad: [UInt8]
    let isInitiator: Bool
    /// This side's share (`Ya` or `Yb`), sent to the peer.
    let publicShare: [UInt8]
    private let scalar: [UInt8]

    /// Starts a run: samples a scalar (or takes `scalar`, for test vectors) and computes the share.
    init(initiator: Bool, prs: [UInt8], sid: [UInt8], ad: [UInt8], scalar: [UInt8]? = nil) throws(SendspinError) {
        let scalar = scalar ?? SendspinTrustStore.randomKey()
        self.sid = sid
        self.ad = ad
        self.isInitiator = initiator
        self.scalar = scalar
        self.publicShare = try Self.share(scalar: scalar, generator: Self.generatorHash(prs: prs, sid: sid))
    }

    /// Takes the peer's share: the keys both sides hold when their codes matched.
    func derive(peerShare: [UInt8], peerAD: [UInt8]) throws(SendspinError) -> Keys {
        guard peerShare.count == Self.shareBytes else {
            throw SendspinError(.pairing, "a CPace share of \(peerShare.count) bytes, not \(Self.shareBytes)")
        }
        // X25519 clamps the scalar as the share's multiple did; CPace's scalar_mult_vfy refuses the identity.
        guard let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: scalar),
            let shared = key.agreement(with: peerShare)
        else {
            throw SendspinError(.pairing, "the peer's CPace share is a low-order point")
        }
        let own = (publicShare, ad)
        let peer = (peerShare, peerAD)
        let (initiator, responder) = isInitiator ? (own, peer) : (peer, own)
        let transcript = Self.lengthValues([initiator.0, initiator.1]) + Self.lengthValues([responder.0, responder.1])
        let isk = Array(SHA512.hash(data: Self.lengthValues([Array("CPace255_ISK".utf8), sid, shared]) + transcript))
        let macKey = Array(SHA512.hash(data: Array("CPaceMac".utf8) + sid + isk))
        return Keys(
            isk: isk, macKey: SymmetricKey(data: macKey), own: Self.lengthValues([own.0, own.1]),
            peer: Self.lengthValues([peer.0, peer.1]))
    }

    /// The run's outcome: the intermediate session key and the confirmation tags.
    struct Keys {
        /// The intermediate session key, input to the keys that wrap what the pairing sends.
        let isk: [UInt8]
        fileprivate let macKey: SymmetricKey
        fileprivate let own: [UInt8]
        fileprivate let peer: [UInt8]

        /// This side's confirmation tag (`Ta` or `Tb`).
        var tag: [UInt8] { Array(HMAC<SHA512>.authenticationCode(for: own, using: macKey)) }

        /// Whether the peer's tag proves it holds the same code; a reflected share never does.
        func verify(_ peerTag: [UInt8]) -> Bool {
            own != peer && HMAC<SHA512>.isValidAuthenticationCode(peerTag, authenticating: peer, using: macKey)
        }
    }

    /// The first 32 bytes of SHA-512 over the generator string: `lv(DSI) lv(PRS) lv(zero pad) lv(CI) lv(sid)`,
    /// padded so that DSI and PRS fill one SHA-512 block.
    static func generatorHash(prs: [UInt8], sid: [UInt8]) -> [UInt8] {
        let dsi = Array("CPace255".utf8)
        let pad = max(0, 128 - 1 - lengthPrefix(prs.count).count - prs.count - lengthPrefix(dsi.count).count - dsi.count)
        let string = lengthValues([dsi, prs, [UInt8](repeating: 0, count: pad), [], sid])
        return Array(SHA512.hash(data: string).prefix(32))
    }

    /// `X25519(scalar, Elligator2(hash))`. libsodium maps the hash onto Edwards25519 with the same
    /// Elligator2 (non-square 2) and then multiplies by the cofactor 8; X25519's clamped scalar is
    /// a multiple of 8, so that scalar over 8 times the cleared point is the same multiple, read
    /// back as its Montgomery u-coordinate.
    static func share(scalar: [UInt8], generator hash: [UInt8]) throws(SendspinError) -> [UInt8] {
        try sodiumCheck("sodium_init", sodiumReady)
        var point = [UInt8](repeating: 0, count: 32)
        try sodiumCheck("crypto_core_ed25519_from_uniform", crypto_core_ed25519_from_uniform(&point, hash))
        var clamped = scalar
        clamped[0] &= 248
        clamped[31] = clamped[31] & 127 | 64
        let eighth = (0..<32).map { i in clamped[i] >> 3 | (i < 31 ? clamped[i + 1] << 5 : 0) }
        var product = [UInt8](repeating: 0, count: 32)
        try sodiumCheck("crypto_scalarmult_ed25519_noclamp", crypto_scalarmult_ed25519_noclamp(&product, eighth, point))
        var u = [UInt8](repeating: 0, count: 32)
        try sodiumCheck("crypto_sign_ed25519_pk_to_curve25519", crypto_sign_ed25519_pk_to_curve25519(&u, product))
        return u
    }

    /// `sodium_init` once per process: 0 the first time, 1 after, -1 when it cannot run.
    private static let sodiumReady: Int32 = sodium_init() < 0 ? -1 : 0

    /// CPace's `lv_cat`: each part after its length as a little-endian base-128 varint.
    static func lengthValues(_ parts: [[UInt8]]) -> [UInt8] {
        parts.flatMap { lengthPrefix($0.count) + $0 }
    }

    private static func lengthPrefix(_ length: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = length
        repeat {
            bytes.append(UInt8(rest & 0x7F) | (rest > 0x7F ? 0x80 : 0))
            rest >>= 7
        } while rest > 0
        return bytes
    }
}

/// Every libsodium call goes through here: a failure (it says no more than -1) becomes a
/// `.pairing` error naming the call.
func sodiumCheck(_ call: String, _ result: Int32) throws(SendspinError) {
    guard result == 0 else {
        throw SendspinError(.pairing, "\(call) failed (a point of low order, or the library could not start)")
    }
}
