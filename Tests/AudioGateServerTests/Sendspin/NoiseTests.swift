import Crypto
import Foundation
import Testing

@testable import AudioGateServer

/// The Noise layer against the published KKpsk2 test vectors (both suites Sendspin names), and
/// what a real session needs beyond them: a wrong PSK, a tampered message, a replay.
@Suite("Noise KKpsk2")
struct NoiseTests {
    /// One vector of the cacophony file.
    struct Vector: Decodable {
        struct Message: Decodable {
            var payload: String
            var ciphertext: String
        }

        var protocol_name: String
        var init_prologue: String
        var init_psks: [String]
        var init_static: String
        var init_ephemeral: String
        var init_remote_static: String
        var resp_static: String
        var resp_ephemeral: String
        var resp_remote_static: String
        var handshake_hash: String
        var messages: [Message]
    }

    struct VectorFile: Decodable {
        var vectors: [Vector]
    }

    static let vectorsURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Vectors/noise-kkpsk2.json")

    static func vectors() throws -> [Vector] {
        try JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: vectorsURL)).vectors
    }

    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    static func key(_ text: String) throws -> Curve25519.KeyAgreement.PrivateKey {
        try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: hex(text))
    }

    @Test("the cacophony KKpsk2 vectors: both messages, the handshake hash and four transport messages, each suite")
    func vectorsMatch() throws {
        let vectors = try Self.vectors()
        #expect(Set(vectors.map(\.protocol_name)) == Set(NoiseCipherSuite.allCases.map(\.protocolName)))
        for vector in vectors {
            let suite = try #require(NoiseCipherSuite.allCases.first { $0.protocolName == vector.protocol_name })
            let psk = Self.hex(vector.init_psks[0])
            var initiator = try NoiseHandshake(
                suite: suite, role: .initiator, staticKey: Self.key(vector.init_static),
                remoteStatic: Self.hex(vector.init_remote_static), prologue: Self.hex(vector.init_prologue), psk: psk,
                ephemeral: Self.key(vector.init_ephemeral))
            // The responder learns the PSK only after message 1, as a Sendspin player does.
            var responder = try NoiseHandshake(
                suite: suite, role: .responder, staticKey: Self.key(vector.resp_static),
                remoteStatic: Self.hex(vector.resp_remote_static), prologue: Self.hex(vector.init_prologue),
                ephemeral: Self.key(vector.resp_ephemeral))

            let first = vector.messages[0]
            let message1 = try initiator.writeMessage(Self.hex(first.payload))
            #expect(message1 == Self.hex(first.ciphertext), "\(suite) message 1")
            #expect(try responder.readMessage(message1) == Self.hex(first.payload))
            try responder.setPSK(psk)
            let second = vector.messages[1]
            let message2 = try responder.writeMessage(Self.hex(second.payload))
            #expect(message2 == Self.hex(second.ciphertext), "\(suite) message 2")
            #expect(try initiator.readMessage(message2) == Self.hex(second.payload))
            #expect(initiator.isComplete && responder.isComplete)
            #expect(initiator.handshakeHash == Self.hex(vector.handshake_hash))
            #expect(responder.handshakeHash == Self.hex(vector.handshake_hash))

            var server = try initiator.split()
            var player = try responder.split()
            for (index, message) in vector.messages.enumerated().dropFirst(2) {
                let payload = Self.hex(message.payload)
                // After the handshake the vectors alternate: initiator, responder, initiator, ...
                if index % 2 == 0 {
                    let sealed = try server.send.encrypt(ad: [], payload)
                    #expect(sealed == Self.hex(message.ciphertext), "\(suite) transport message \(index)")
                    #expect(try player.receive.decrypt(ad: [], sealed[...]) == payload)
                } else {
                    let sealed = try player.send.encrypt(ad: [], payload)
                    #expect(sealed == Self.hex(message.ciphertext), "\(suite) transport message \(index)")
                    #expect(try server.receive.decrypt(ad: [], sealed[...]) == payload)
                }
            }
        }
    }

    /// A fresh handshake between two random identities; `serverPSK` and `playerPSK` may differ.
    private func handshake(suite: NoiseCipherSuite, serverPSK: [UInt8], playerPSK: [UInt8], tamper: Bool = false)
        throws -> (NoiseHandshake, NoiseHandshake, [UInt8])
    {
        let serverKey = Curve25519.KeyAgreement.PrivateKey()
        let playerKey = Curve25519.KeyAgreement.PrivateKey()
        var initiator = try NoiseHandshake(
            suite: suite, role: .initiator, staticKey: serverKey, remoteStatic: Array(playerKey.publicKey.rawRepresentation),
            prologue: Array("prologue".utf8), psk: serverPSK)
        var responder = try NoiseHandshake(
            suite: suite, role: .responder, staticKey: playerKey, remoteStatic: Array(serverKey.publicKey.rawRepresentation),
            prologue: Array("prologue".utf8))
        _ = try responder.readMessage(initiator.writeMessage(Array("{}".utf8)))
        try responder.setPSK(playerPSK)
        var message2 = try responder.writeMessage(Array("{}".utf8))
        if tamper { message2[message2.count - 1] ^= 1 }
        return (initiator, responder, message2)
    }

    @Test("message 2 under another PSK, or with one bit flipped, fails to authenticate")
    func wrongPSKFails() throws {
        for suite in NoiseCipherSuite.allCases {
            let psk = [UInt8](repeating: 7, count: 32)
            let (initiator, _, message2) = try handshake(suite: suite, serverPSK: psk, playerPSK: [UInt8](repeating: 8, count: 32))
            var wrong = initiator
            #expect(throws: SendspinError.self) { _ = try wrong.readMessage(message2) }
            let (tampered, _, bad) = try handshake(suite: suite, serverPSK: psk, playerPSK: psk, tamper: true)
            var flipped = tampered
            #expect(throws: SendspinError.self) { _ = try flipped.readMessage(bad) }
            let (good, _, ok) = try handshake(suite: suite, serverPSK: psk, playerPSK: psk)
            var right = good
            #expect(try right.readMessage(ok) == Array("{}".utf8))
        }
    }

    @Test("a transport message replayed, reordered or cut short does not decrypt")
    func transportRejectsReplays() throws {
        let psk = [UInt8](repeating: 1, count: 32)
        let (started, responder, message2) = try handshake(suite: .chaChaPoly, serverPSK: psk, playerPSK: psk)
        var initiator = started
        _ = try initiator.readMessage(message2)
        var server = try initiator.split()
        var player = try responder.split()
        let first = try server.send.encrypt(ad: [], [1, 2, 3])
        let second = try server.send.encrypt(ad: [], [4, 5, 6])
        #expect(throws: SendspinError.self) { try player.receive.decrypt(ad: [], second[...]) }
        #expect(try player.receive.decrypt(ad: [], first[...]) == [1, 2, 3])
        #expect(throws: SendspinError.self) { try player.receive.decrypt(ad: [], first[...]) }
        #expect(throws: SendspinError.self) { try player.receive.decrypt(ad: [], first.prefix(10)) }
        #expect(try player.receive.decrypt(ad: [], second[...]) == [4, 5, 6])
        #expect(player.handshakeHashMatches(server))
    }

    @Test("a handshake out of turn, a short message or a bad key is a handshake error")
    func outOfTurn() throws {
        let key = Curve25519.KeyAgreement.PrivateKey()
        #expect(throws: SendspinError.self) {
            _ = try NoiseHandshake(suite: .chaChaPoly, role: .responder, staticKey: key, remoteStatic: [1, 2, 3], prologue: [])
        }
        var responder = try NoiseHandshake(
            suite: .chaChaPoly, role: .responder, staticKey: key, remoteStatic: Array(key.publicKey.rawRepresentation), prologue: [])
        #expect(throws: SendspinError.self) { _ = try responder.writeMessage([]) }
        #expect(throws: SendspinError.self) { _ = try responder.readMessage([UInt8](repeating: 0, count: 40)) }
        #expect(throws: SendspinError.self) { _ = try responder.split() }
    }

    @Test("a message 1 whose ephemeral key is of low order fails at once, not on its tag")
    func lowOrderEphemeral() throws {
        let serverKey = Curve25519.KeyAgreement.PrivateKey()
        let playerKey = Curve25519.KeyAgreement.PrivateKey()
        var initiator = try NoiseHandshake(
            suite: .chaChaPoly, role: .initiator, staticKey: serverKey, remoteStatic: Array(playerKey.publicKey.rawRepresentation),
            prologue: [], psk: [UInt8](repeating: 0, count: 32))
        var message1 = try initiator.writeMessage(Array("{}".utf8))
        // u = 0 and u = 1: every X25519 with them is all zeros.
        for point in [[UInt8](repeating: 0, count: 32), [1] + [UInt8](repeating: 0, count: 31)] {
            message1.replaceSubrange(0..<32, with: point)
            var responder = try NoiseHandshake(
                suite: .chaChaPoly, role: .responder, staticKey: playerKey, remoteStatic: Array(serverKey.publicKey.rawRepresentation),
                prologue: [])
            let error = #expect(throws: SendspinError.self) { _ = try responder.readMessage(message1) }
            #expect(error?.message.contains("low order") == true, "\(error?.message ?? "")")
        }
    }
}

extension NoiseTransport {
    fileprivate func handshakeHashMatches(_ other: NoiseTransport) -> Bool { handshakeHash == other.handshakeHash }
}
