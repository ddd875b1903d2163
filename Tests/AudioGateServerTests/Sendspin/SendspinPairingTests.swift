import AudioGateCore
import Crypto
import Foundation
import Testing

@testable import AudioGateServer

/// The player's pairing trust without a server: the token, which PSK a handshake's reference
/// names, records kept across restarts, and the pairing messages on the wire.
@Suite("Sendspin pairing")
struct SendspinPairingTests {
    /// A folder of its own under the temporary directory, removed by `cleanUp`.
    private static func folder() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("sendspin-trust-\(UUID().uuidString)/data").path
    }

    private static func cleanUp(_ folder: String) {
        try? FileManager.default.removeItem(atPath: (folder as NSString).deletingLastPathComponent)
    }

    @Test("the pairing token and psk_id match the reference implementation's for the same keys")
    func token() {
        let clientID = Base64URL.encode(Array(0..<32))
        let psk = Array(UInt8(100)..<132)
        #expect(clientID == "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8")
        #expect(
            SendspinTrustStore.token(clientID: clientID, pairingPSK: psk)
                == "SP:0AAAQEAYEAUDAOCAJBIFQYDIOB4IBCEQTCQKRMFYYDENBWHA5DYPWIZLGM5UGS9TLNRWW433QOFZHG5DVOZ3XQ6L9PN6H97T7QCAYFAY")
        #expect(SendspinTrustStore.pskID(psk) == "7rj3QO7qAi4fYZUmLaeLHo7Kd3v-NN5jUizUrTYVmzc")
        #expect(Base32.encode(Array("foobar".utf8)) == "MZXW6YTBOI")
        #expect(Base32.encode(Array("f".utf8)) == "MY")
    }

    @Test("a reference names the Sentinel, the Pairing PSK or a server's long-term PSK; another server's is refused")
    func resolve() async throws {
        let pairing = SendspinTrustStore.randomKey()
        let store = SendspinTrustStore(pairingPSK: pairing)
        let server = Base64URL.encode(Array(repeating: 7, count: 32))
        let other = Base64URL.encode(Array(repeating: 8, count: 32))
        #expect(try store.resolve(pskID: SendspinTrustStore.sentinelPSKID, category: "sn", serverID: server) == SendspinTrustStore.sentinel)
        #expect(try store.resolve(pskID: SendspinTrustStore.pskID(pairing), category: "pr", serverID: server)?.psk == pairing)
        // The right id under the wrong category names nothing.
        #expect(try store.resolve(pskID: SendspinTrustStore.pskID(pairing), category: "sn", serverID: server) == nil)
        #expect(try store.resolve(pskID: SendspinTrustStore.sentinelPSKID, category: "pr", serverID: server) == nil)
        let longTerm = SendspinTrustStore.randomKey()
        #expect(try store.resolve(pskID: SendspinTrustStore.pskID(longTerm), category: "lt", serverID: server) == nil)
        try await store.pair(serverID: server, psk: longTerm)
        #expect(store.pairedServers == 1)
        #expect(try store.resolve(pskID: SendspinTrustStore.pskID(longTerm), category: "lt", serverID: server)?.category == .longTerm)
        let misbound = #expect(throws: SendspinError.self) {
            _ = try store.resolve(pskID: SendspinTrustStore.pskID(longTerm), category: "lt", serverID: other)
        }
        #expect(misbound?.code == .handshake)
        #expect(throws: SendspinError.self) { _ = try store.resolve(pskID: "x", category: "zz", serverID: server) }
        // Pairing again replaces the server's PSK; unpairing forgets it.
        let again = SendspinTrustStore.randomKey()
        try await store.pair(serverID: server, psk: again)
        #expect(store.pairedServers == 1)
        #expect(try store.resolve(pskID: SendspinTrustStore.pskID(longTerm), category: "lt", serverID: server) == nil)
        try await store.unpair(serverID: server)
        #expect(store.pairedServers == 0)
        #expect(try store.resolve(pskID: SendspinTrustStore.pskID(again), category: "lt", serverID: server) == nil)
    }

    @Test("the Pairing PSK and the records are kept owner-only in the data directory and read back; damage is refused")
    func persisted() async throws {
        let folder = Self.folder()
        defer { Self.cleanUp(folder) }
        let first = try SendspinIdentity.loadOrCreate(directory: folder)
        let server = Base64URL.encode(Array(repeating: 9, count: 32))
        let psk = SendspinTrustStore.randomKey()
        try await first.trust.pair(serverID: server, psk: psk)
        let second = try SendspinIdentity.loadOrCreate(directory: folder)
        #expect(second.pairingToken == first.pairingToken)
        #expect(second.pairingToken.hasPrefix("SP:0"))
        #expect(try second.trust.resolve(pskID: SendspinTrustStore.pskID(psk), category: "lt", serverID: server)?.psk == psk)
        #expect(try SendspinPairing.token(dataDirectory: folder) == first.pairingToken)
        for name in [SendspinTrustStore.pairingFileName, SendspinTrustStore.recordsFileName] {
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: folder + "/" + name)[.posixPermissions] as? Int)
            #expect(mode == 0o600)
        }
        try "{\"not\": \"a list\"}\n".write(toFile: folder + "/" + SendspinTrustStore.recordsFileName, atomically: false, encoding: .utf8)
        #expect(throws: SendspinError.self) { _ = try SendspinIdentity.loadOrCreate(directory: folder) }
    }

    @Test("made by root in a service's folder, the secrets are the folder owner's", .enabled(if: geteuid() == 0))
    func ownedByFolder() throws {
        let folder = Self.folder()
        defer { Self.cleanUp(folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        #expect(chown(folder, 4321, 4321) == 0)
        _ = try SendspinPairing.token(dataDirectory: folder)
        for name in [SendspinIdentity.fileName, SendspinTrustStore.pairingFileName] {
            var info = stat()
            #expect(stat(folder + "/" + name, &info) == 0)
            #expect(info.st_uid == 4321 && info.st_gid == 4321)
        }
    }

    @Test("at most 32 servers are kept: a further pairing forgets the one paired longest ago")
    func bounded() async throws {
        let store = SendspinTrustStore(pairingPSK: SendspinTrustStore.randomKey())
        let first = SendspinTrustStore.randomKey()
        try await store.pair(serverID: "server-0", psk: first)
        for index in 1...SendspinTrustStore.maximumRecords {
            try await store.pair(serverID: "server-\(index)", psk: SendspinTrustStore.randomKey())
        }
        #expect(store.pairedServers == SendspinTrustStore.maximumRecords)
        #expect(try store.resolve(pskID: SendspinTrustStore.pskID(first), category: "lt", serverID: "server-0") == nil)
    }

    @Test("the pairing messages: hello offers the Pairing PSK, the dynamic code (and the static one when set), pair-init and pair-finalize, and what the server sends")
    func messages() throws {
        let hello = SendspinOutbound.clientHello(name: "n", version: "1", formats: [], bufferCapacity: 1)
        #expect(
            hello.contains(
                #""supported_pair_methods":{"dynamic_pairing_code":{"formats":["digits"],"out_channels":["display","speaker"]},"pairing_psk":{}}"#))
        let coded = SendspinOutbound.clientHello(name: "n", version: "1", formats: [], bufferCapacity: 1, staticPairingCode: true)
        #expect(coded.contains(#""pairing_psk":{},"static_pairing_code":{}}"#))
        #expect(SendspinOutbound.pairInit(pairingIndex: 2) == #"{"payload":{"pairing_index":2},"type":"client/pair-init"}"#)
        let psk = Array(repeating: UInt8(1), count: 32)
        #expect(SendspinOutbound.pairFinalize(longTermPSK: psk).contains(#""long_term_psk":"\#(Base64URL.encode(psk))""#))
        func decode(_ text: String) throws -> SendspinMessage { try SendspinMessage.decode(Array(text.utf8)[...]) }
        #expect(try decode(#"{"type":"server/pair-finalize","payload":{}}"#) == .pairFinalized)
        #expect(try decode(#"{"type":"server/pair-init","payload":{}}"#) == .pairInit(nonceA: nil))
        #expect(try decode(#"{"type":"server/pair-init","payload":{"nonce_A":"AQID"}}"#) == .pairInit(nonceA: [1, 2, 3]))
        #expect(try decode(#"{"type":"server/pair-auth","payload":{"pake_msg_1":"AQID"}}"#) == .pairAuth([1, 2, 3]))
        #expect(try decode(#"{"type":"server/pair-confirm","payload":{"server_kc":"AQID"}}"#) == .pairConfirm([1, 2, 3]))
        #expect(throws: SendspinError.self) { try decode(#"{"type":"server/pair-auth","payload":{"pake_msg_1":"%%"}}"#) }
        #expect(throws: SendspinError.self) { try decode(#"{"type":"server/pair-confirm","payload":{}}"#) }
        #expect(try decode(#"{"type":"pair/abort","payload":{"reason":"user_cancelled"}}"#) == .pairAborted(reason: "user_cancelled"))
        #expect(try decode(#"{"type":"server/unpair","payload":{}}"#) == .unpair)
        #expect(try decode(#"{"type":"noise/handshake","payload":{"data":"AAEC"}}"#) == .rehandshake([0, 1, 2]))
        #expect(throws: SendspinError.self) { _ = try decode(#"{"type":"noise/handshake","payload":{"data":"+/"}}"#) }
        let activation = try decode(#"{"type":"server/activate","payload":{"activities":["pairing"],"pairing":{"method":"pairing_psk"}}}"#)
        #expect(activation == .serverActivate(SendspinActivation(activities: ["pairing"], activeRoles: nil, pairing: .init(method: "pairing_psk"))))
    }
}
