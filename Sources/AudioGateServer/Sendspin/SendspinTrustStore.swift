import Crypto
import Foundation
import NIOPosix
import Synchronization

/// The player's pairing secrets in the data directory: the Pairing PSK an operator copies into a
/// server as a pairing token (`audiogate sendspin-token`), and the long-term PSK of each server
/// that paired, which that server names by its `psk_id` in later handshakes.
final class SendspinTrustStore: Sendable {
    static let pairingFileName = "sendspin-pairing-psk"
    static let recordsFileName = "sendspin-pairings.json"
    /// Servers kept: pairing a further one forgets the one paired longest ago.
    static let maximumRecords = 32

    /// The PSK categories of Noise message 1 (`psk_category`).
    enum Category: String, Sendable {
        case sentinel = "sn"
        case pairing = "pr"
        case longTerm = "lt"
    }

    /// A PSK that keys a handshake, and what kind it is.
    struct Resolved: Sendable, Equatable {
        var psk: [UInt8]
        var category: Category
    }

    /// One paired server as the records file keeps it: its identity and the long-term PSK this
    /// player made for it, in base64url.
    struct Record: Codable, Sendable, Equatable {
        var serverID: String
        var psk: String
        enum CodingKeys: String, CodingKey {
            case serverID = "server_id"
            case psk
        }
    }

    /// A paired server in memory, with the `psk_id` a handshake names its PSK by.
    struct Paired: Sendable {
        var serverID: String
        var psk: [UInt8]
        var pskID: String

        init(serverID: String, psk: [UInt8]) {
            self.serverID = serverID
            self.psk = psk
            pskID = SendspinTrustStore.pskID(psk)
        }

        /// A record read from the file; nil when its PSK is not a key.
        init?(_ record: Record) {
            guard let psk = Base64URL.decode(record.psk), psk.count == NoiseHandshake.keyBytes else { return nil }
            self.init(serverID: record.serverID, psk: psk)
        }

        var record: Record { Record(serverID: serverID, psk: Base64URL.encode(psk)) }
    }

    /// The Sentinel PSK: the published key of unpaired sessions (it authenticates nothing).
    static let sentinelPSK = Array(SHA256Bytes.of("sendspin-sentinel-psk-v1"))
    static let sentinelPSKID = pskID(sentinelPSK)
    static let sentinel = Resolved(psk: sentinelPSK, category: .sentinel)

    let pairingPSK: [UInt8]
    private let recordsPath: String?
    private let records: Mutex<[Paired]>

    /// A store over `pairingPSK` and `records`, saved to `recordsPath` on each change (nil: kept in memory).
    init(pairingPSK: [UInt8], records: [Paired] = [], recordsPath: String? = nil) {
        self.pairingPSK = pairingPSK
        self.records = Mutex(records)
        self.recordsPath = recordsPath
    }

    /// The store in `directory`: its Pairing PSK made on first use, its records read.
    static func loadOrCreate(directory: String) throws(SendspinError) -> SendspinTrustStore {
        let pskPath = ServerConfiguration.path(pairingFileName, in: directory)
        let psk: [UInt8]
        if let text = try SecretFile.read(pskPath) {
            guard let bytes = Base64URL.decode(text), bytes.count == NoiseHandshake.keyBytes else {
                throw SendspinError(.key, "\(pskPath) does not hold a PSK; remove it to make a new one (servers paired by its token stay paired)")
            }
            psk = bytes
        } else {
            psk = randomKey()
            try SecretFile.store(Base64URL.encode(psk), at: pskPath)
        }
        let recordsPath = ServerConfiguration.path(recordsFileName, in: directory)
        var records: [Paired] = []
        if let text = try SecretFile.read(recordsPath) {
            guard let decoded = try? JSONDecoder().decode([Record].self, from: Data(text.utf8)) else {
                throw SendspinError(.key, "\(recordsPath) is not a list of {server_id, psk}; remove it to forget every paired server")
            }
            records = decoded.compactMap(Paired.init)
        }
        return SendspinTrustStore(pairingPSK: psk, records: records, recordsPath: recordsPath)
    }

    /// The PSK that Noise message 1's `psk_id` and `psk_category` name for `serverID`; nil when
    /// this player holds none. A long-term PSK made with another server is a handshake error.
    func resolve(pskID: String, category: String, serverID: String) throws(SendspinError) -> Resolved? {
        switch Category(rawValue: category) {
        case .sentinel?:
            return pskID == Self.sentinelPSKID ? Resolved(psk: Self.sentinelPSK, category: .sentinel) : nil
        case .pairing?:
            return pskID == Self.pskID(pairingPSK) ? Resolved(psk: pairingPSK, category: .pairing) : nil
        case .longTerm?:
            guard let found = records.withLock({ $0.first { $0.pskID == pskID } }) else { return nil }
            guard found.serverID == serverID else {
                throw SendspinError(.handshake, "the server referenced the long-term PSK of another server")
            }
            return Resolved(psk: found.psk, category: .longTerm)
        case nil:
            throw SendspinError(.handshake, "Noise message 1 names PSK category '\(category.prefix(8))'")
        }
    }

    /// How many servers are paired.
    var pairedServers: Int { records.withLock { $0.count } }

    /// Keeps `psk` as `serverID`'s long-term PSK, replacing an earlier one, and saves the records
    /// (off the event loops) before returning.
    func pair(serverID: String, psk: [UInt8]) async throws(SendspinError) {
        let paired = Paired(serverID: serverID, psk: psk)
        let snapshot = records.withLock { records in
            records.removeAll { $0.serverID == serverID }
            records.append(paired)
            if records.count > Self.maximumRecords { records.removeFirst(records.count - Self.maximumRecords) }
            return records
        }
        try await save(snapshot)
    }

    /// Forgets `serverID` (`server/unpair`).
    func unpair(serverID: String) async throws(SendspinError) {
        let snapshot = records.withLock { records -> [Paired]? in
            let before = records.count
            records.removeAll { $0.serverID == serverID }
            return records.count == before ? nil : records
        }
        if let snapshot { try await save(snapshot) }
    }

    private func save(_ records: [Paired]) async throws(SendspinError) {
        guard let recordsPath else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Plain strings: encoding cannot fail.
        let text = String(decoding: (try? encoder.encode(records.map(\.record))) ?? Data("[]".utf8), as: UTF8.self)
        do {
            try await NIOThreadPool.singleton.runIfActive { try SecretFile.store(text, at: recordsPath) }
        } catch let error as SendspinError {
            throw error
        } catch {
            throw SendspinError(.key, "cannot save \(recordsPath): the server is shutting down")
        }
    }

    /// The pairing token of `clientID` and `pairingPSK`: `SP:0` then unpadded base32 of the two
    /// keys, with `2` written as `9` (the reference implementation's format).
    static func token(clientID: String, pairingPSK: [UInt8]) -> String {
        "SP:0" + Base32.encode((Base64URL.decode(clientID) ?? []) + pairingPSK).replacingOccurrences(of: "2", with: "9")
    }

    /// `psk_id` of a PSK: base64url of SHA-256 over the label and the key.
    static func pskID(_ psk: [UInt8]) -> String {
        Base64URL.encode(Array(SHA256Bytes.of(Array("sendspin-psk-id-v1".utf8) + psk)))
    }

    /// 32 bytes from the system's secure generator.
    static func randomKey() -> [UInt8] {
        SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    }
}

/// Unpadded base32 (RFC 4648 section 6). Foundation has none, and the one use (a 64-byte token)
/// does not justify a package.
enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")

    static func encode(_ bytes: [UInt8]) -> String {
        var text = ""
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                text.append(alphabet[Int(buffer >> UInt32(bits) & 31)])
            }
        }
        if bits > 0 { text.append(alphabet[Int(buffer << UInt32(5 - bits) & 31)]) }
        return text
    }
}
