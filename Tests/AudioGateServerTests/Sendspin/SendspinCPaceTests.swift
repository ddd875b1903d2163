import Crypto
import Foundation
import Testing

@testable import AudioGateServer

/// CPace as the pairing-code methods run it, against the reference implementation's (the `cpace`
/// package aiosendspin uses) figures for the same code, session id and scalars.
@Suite("Sendspin CPace")
struct SendspinCPaceTests {
    private static func hex(_ text: String) -> [UInt8] {
        stride(from: 0, to: text.count, by: 2).map { offset in
            let start = text.index(text.startIndex, offsetBy: offset)
            return UInt8(text[start..<text.index(start, offsetBy: 2)], radix: 16)!
        }
    }

    private static func text(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// `sendspin-pair-pake-v1`, a handshake hash 00..1f, attempt 1, round 1.
    private static let sid = Array("sendspin-pair-pake-v1".utf8) + Array(0..<32) + [0, 0, 0, 1, 0, 0, 0, 1]
    private static let code = Array("12345678".utf8)
    private static let serverScalar = [UInt8](repeating: 0x11, count: 31) + [0x7F]
    private static let clientScalar = Array(UInt8(100)..<132)

    @Test("shares, session key and tags equal the reference implementation's")
    func vectors() throws {
        let server = try SendspinCPace(initiator: true, prs: Self.code, sid: Self.sid, ad: Array("server".utf8), scalar: Self.serverScalar)
        let client = try SendspinCPace(initiator: false, prs: Self.code, sid: Self.sid, ad: Array("client".utf8), scalar: Self.clientScalar)
        #expect(Self.text(server.publicShare) == "6f56f8b960696dce19f48e1794a3da2bd0f627a88c9b3bef3abdad64348a4556")
        #expect(Self.text(client.publicShare) == "57a65e85cab815ee62d09c8a3a0c355dc90856ce63f42a40cc821abb2d8c0e22")
        let serverKeys = try server.derive(peerShare: client.publicShare, peerAD: Array("client".utf8))
        let clientKeys = try client.derive(peerShare: server.publicShare, peerAD: Array("server".utf8))
        #expect(
            Self.text(clientKeys.isk)
                == "df715028eec58bab2614993c5f80a8bb1d51c0e555eee9f0d88013d1b5c7f4bb9b888bf9ab2d76c12a8fd5b6574eb08bcd69ce9320668ead229d62ae5f1fbdca")
        #expect(serverKeys.isk == clientKeys.isk)
        #expect(
            Self.text(serverKeys.tag)
                == "37eaf592edee8b595f51ab01f5bd96848418d203d48acd7d6b8304e781cdae295f35d2f6a7940772843199651ffb5b6d308925bdb2026a56ba73373975c696ae")
        #expect(
            Self.text(clientKeys.tag)
                == "40a7d6ad64a7ea3217f4a13882085ee31b30a6877b271a022e5024b16bad9492d63ceb8c9242fb840dd1185d6ed8ab675c3cdffd2d422d09246776a204e737b3")
        #expect(clientKeys.verify(serverKeys.tag))
        #expect(serverKeys.verify(clientKeys.tag))
        let wrap = SendspinPairingCode.wrapKey(label: SendspinPairingCode.pskWrapLabel, sid: Self.sid, isk: clientKeys.isk)
        #expect(Self.text(wrap) == "d3fb0d3509c9932802bc89e23e0ace231c2168d502d886d2fdaecb93a787f610")
        let psk = Array(UInt8(200)..<232)
        #expect(
            Self.text(try SendspinPairingCode.wrap(psk, key: wrap, suite: .chaChaPoly))
                == "c32efbb057709aac71024eb974e86abf075e71efc52a2612c4ffa087ed9cc4bcb0e1be04577d06d8102d413190cb0ae6")
        #expect(
            Self.text(try SendspinPairingCode.wrap(psk, key: wrap, suite: .aesGCM))
                == "778d5a44ab4890b978ea79ee4278267138ec3c0b46b814883f1391a35d5d11e97c0b08a8edaff505f3908556f728dfce")
        #expect(SendspinPairingCode.sid(handshakeHash: Array(0..<32), pairingIndex: 1) == Self.sid)
    }

    @Test("a static pairing code is exactly 8 ASCII digits")
    func codes() {
        #expect(SendspinPairingCode.isValid("24681357"))
        for bad in ["2468135", "246813579", "2468-1357", "2468135a", "２４６８１３５７", ""] {
            #expect(!SendspinPairingCode.isValid(bad), "\(bad)")
        }
    }

    @Test("another code gives other keys, and neither side's tag verifies")
    func mismatch() throws {
        let server = try SendspinCPace(initiator: true, prs: Array("87654321".utf8), sid: Self.sid, ad: Array("server".utf8))
        let client = try SendspinCPace(initiator: false, prs: Self.code, sid: Self.sid, ad: Array("client".utf8))
        let serverKeys = try server.derive(peerShare: client.publicShare, peerAD: Array("client".utf8))
        let clientKeys = try client.derive(peerShare: server.publicShare, peerAD: Array("server".utf8))
        #expect(serverKeys.isk != clientKeys.isk)
        #expect(!clientKeys.verify(serverKeys.tag))
        #expect(!serverKeys.verify(clientKeys.tag))
    }

    @Test("a share of the wrong length, of low order, or the own share reflected is refused")
    func badShares() throws {
        let client = try SendspinCPace(initiator: false, prs: Self.code, sid: Self.sid, ad: Array("client".utf8))
        #expect(throws: SendspinError.self) { try client.derive(peerShare: [1, 2, 3], peerAD: Array("server".utf8)) }
        // u = 0 and u = 1 are points of low order: every multiple is the identity.
        #expect(throws: SendspinError.self) { try client.derive(peerShare: [UInt8](repeating: 0, count: 32), peerAD: Array("server".utf8)) }
        #expect(throws: SendspinError.self) { try client.derive(peerShare: [1] + [UInt8](repeating: 0, count: 31), peerAD: Array("server".utf8)) }
        let reflected = try client.derive(peerShare: client.publicShare, peerAD: Array("client".utf8))
        #expect(!reflected.verify(reflected.tag))
    }
}
