import Crypto
import Foundation
import Testing

@testable import AudioGateServer

/// The pairing-code exchanges of one connection, run against a server side made of the same CPace:
/// the dynamic code's digits as the reference derives them, a wrong round retried, and what a
/// matching code sends.
@Suite("Sendspin pairing codes")
struct SendspinCodePairingTests {
    private static let hash = Array(UInt8(0)..<32)
    private static let nonceB = Array(UInt8(64)..<96)

    private static func payload(_ message: String) -> [String: Any] {
        let object = try? JSONSerialization.jsonObject(with: Data(message.utf8)) as? [String: Any]
        return object?["payload"] as? [String: Any] ?? [:]
    }

    private static func open(_ wrapped: String?, sid: [UInt8], isk: [UInt8], label: [UInt8]) -> [UInt8]? {
        guard let wrapped, let bytes = Base64URL.decode(wrapped), bytes.count > 16 else { return nil }
        let key = SymmetricKey(data: SendspinPairingCode.wrapKey(label: label, sid: sid, isk: isk))
        let box = try? ChaChaPoly.SealedBox(
            nonce: ChaChaPoly.Nonce(data: [UInt8](repeating: 0, count: 12)), ciphertext: bytes.dropLast(16), tag: bytes.suffix(16))
        return box.flatMap { try? Array(ChaChaPoly.open($0, using: key)) }
    }

    @Test("the six digits and the commitment equal the reference implementation's")
    func digits() {
        #expect(SendspinCodePairing.digits(handshakeHash: Self.hash, nonceA: [UInt8](repeating: 7, count: 32), nonceB: Self.nonceB) == "909747")
        #expect(SendspinCodePairing.digits(handshakeHash: Self.hash, nonceA: [16] + [UInt8](repeating: 0, count: 31), nonceB: Self.nonceB) == "031942")
        var pairing = SendspinCodePairing(handshakeHash: Self.hash)
        let pairInit = Self.payload(pairing.beginDynamic(pairingIndex: 2, nonce: Self.nonceB))
        #expect(pairInit["pairing_index"] as? Int == 2)
        #expect(pairInit["commit_B"] as? String == Base64URL.encode(Array(SHA256.hash(data: Array("sendspin-pair-commit-v1".utf8) + Self.nonceB))))
    }

    /// The server's side of one round: its share, then its tag once it has the player's share.
    private static func serverRound(code: String, round: Int, player: inout SendspinCodePairing) throws -> (SendspinCPace.Keys, [UInt8]) {
        let sid = SendspinPairingCode.sid(handshakeHash: hash, pairingIndex: 1, round: round)
        let server = try SendspinCPace(initiator: true, prs: Array(code.utf8), sid: sid, ad: SendspinPairingCode.serverAD)
        let answer = payload(try player.serverShare(server.publicShare))
        let playerShare = Base64URL.decode(answer["pake_msg_2"] as? String ?? "") ?? []
        return (try server.derive(peerShare: playerShare, peerAD: SendspinPairingCode.clientAD), sid)
    }

    @Test("a wrong dynamic code is retried on a new round; the right one sends the tag, the nonce and the PSK wrapped")
    func dynamicRounds() throws {
        var player = SendspinCodePairing(handshakeHash: Self.hash)
        _ = player.beginDynamic(pairingIndex: 1, nonce: Self.nonceB)
        let nonceA = [UInt8](repeating: 7, count: 32)
        let first = try player.serverInit(nonceA: nonceA)
        #expect(first.code == "909747" && first.round == 1)
        let (wrong, _) = try Self.serverRound(code: "123456", round: 1, player: &player)
        guard case .retry(let retry) = try player.serverConfirm(wrong.tag, suite: .chaChaPoly, mayRetry: true) else {
            Issue.record("a wrong code in the first round is not retried")
            return
        }
        #expect(retry.contains("client/pair-retry"))
        #expect(throws: SendspinError.self) { _ = try player.serverInit(nonceA: nonceA) }
        var again = SendspinCodePairing(handshakeHash: Self.hash)
        _ = again.beginDynamic(pairingIndex: 1, nonce: Self.nonceB)
        _ = try again.serverInit(nonceA: nonceA)
        _ = try Self.serverRound(code: "123456", round: 1, player: &again)
        _ = try again.serverConfirm(wrong.tag, suite: .chaChaPoly, mayRetry: true)
        let second = try again.serverInit(nonceA: nil)
        #expect(second.code == "909747" && second.round == 2)
        let (right, sid) = try Self.serverRound(code: "909747", round: 2, player: &again)
        guard case .paired(let messages, let psk) = try again.serverConfirm(right.tag, suite: .chaChaPoly, mayRetry: true) else {
            Issue.record("the right code in the second round does not pair")
            return
        }
        #expect(messages.count == 2)
        let confirm = Self.payload(messages[0])
        #expect(right.verify(Base64URL.decode(confirm["client_kc"] as? String ?? "") ?? []))
        #expect(Self.open(confirm["wrapped_nonce_B"] as? String, sid: sid, isk: right.isk, label: SendspinCodePairing.nonceWrapLabel) == Self.nonceB)
        let finalize = Self.payload(messages[1])
        #expect(Self.open(finalize["wrapped_psk"] as? String, sid: sid, isk: right.isk, label: SendspinPairingCode.pskWrapLabel) == psk)
        #expect(finalize["long_term_psk"] == nil)
    }

    @Test("out of rounds a wrong code aborts; a static attempt never retries; messages out of turn are refused")
    func mismatchAndOrder() throws {
        var player = SendspinCodePairing(handshakeHash: Self.hash)
        _ = player.beginDynamic(pairingIndex: 1, nonce: Self.nonceB)
        _ = try player.serverInit(nonceA: [UInt8](repeating: 7, count: 32))
        let (wrong, _) = try Self.serverRound(code: "123456", round: 1, player: &player)
        guard case .mismatch(let abort) = try player.serverConfirm(wrong.tag, suite: .chaChaPoly, mayRetry: false) else {
            Issue.record("a wrong code with no rounds left does not abort")
            return
        }
        #expect(Self.payload(abort)["reason"] as? String == "pairing_code_mismatch")

        var staticCode = SendspinCodePairing(handshakeHash: Self.hash)
        staticCode.beginStatic(pairingIndex: 1, code: "24681357")
        #expect(staticCode.isStatic)
        let (other, _) = try Self.serverRound(code: "13572468", round: 1, player: &staticCode)
        guard case .mismatch = try staticCode.serverConfirm(other.tag, suite: .aesGCM, mayRetry: true) else {
            Issue.record("a wrong static code is retried")
            return
        }

        var idle = SendspinCodePairing(handshakeHash: Self.hash)
        #expect(throws: SendspinError.self) { _ = try idle.serverShare([UInt8](repeating: 9, count: 32)) }
        #expect(throws: SendspinError.self) { _ = try idle.serverConfirm([], suite: .chaChaPoly, mayRetry: true) }
        #expect(throws: SendspinError.self) { _ = try idle.serverInit(nonceA: nil) }
        _ = idle.beginDynamic(pairingIndex: 1)
        #expect(throws: SendspinError.self) { _ = try idle.serverInit(nonceA: [1, 2, 3]) }
    }
}
