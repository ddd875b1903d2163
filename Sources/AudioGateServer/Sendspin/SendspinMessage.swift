import Foundation

/// A JSON message from the server, decoded by its `type` into what the player acts on; a type
/// the player has no use for is `.ignored`, as the specification asks.
enum SendspinMessage: Sendable, Equatable {
    case serverHello(name: String, connectionReason: String?)
    case serverActivate(SendspinActivation)
    case serverTime(SendspinTimeReply)
    case streamStart(SendspinStreamFormat?)
    case streamClear(roles: [String]?)
    case streamEnd(roles: [String]?)
    case serverCommand(SendspinPlayerCommand?)
    case groupUpdate(SendspinGroup)
    case serverState(SendspinServerState)
    /// A re-handshake: Noise message 1 in band, onto the PSK a pairing just made.
    case rehandshake([UInt8])
    /// `server/pair-init`: the dynamic code's round; the first carries the server's nonce (`nonce_A`).
    case pairInit(nonceA: [UInt8]?)
    /// `server/pair-auth`: the server's CPace share (`pake_msg_1`).
    case pairAuth([UInt8])
    /// `server/pair-confirm`: the server's CPace confirmation tag (`server_kc`).
    case pairConfirm([UInt8])
    /// `server/pair-finalize`: the server stored the long-term PSK this player sent.
    case pairFinalized
    /// `pair/abort`: the server ended the pairing attempt.
    case pairAborted(reason: String?)
    /// `server/unpair`: the server forgot this player's long-term PSK.
    case unpair
    case ignored(type: String)

    /// Longest JSON message taken: far over any control message, under the transport's limit.
    static let maximumJSONBytes = 1 << 16

    /// Decodes one message; throws `.malformedMessage` when it does not parse or lacks a field
    /// its type requires.
    static func decode(_ bytes: ArraySlice<UInt8>) throws(SendspinError) -> SendspinMessage {
        guard bytes.count <= maximumJSONBytes else {
            throw SendspinError(.messageTooLarge, "a JSON message of \(bytes.count) bytes")
        }
        let data = Data(bytes)
        let decoder = JSONDecoder()
        do {
            let type = try decoder.decode(Envelope.self, from: data).type
            func payload<P: Decodable>(_: P.Type) throws -> P { try decoder.decode(Body<P>.self, from: data).payload }
            switch type {
            case "server/hello":
                let hello = try payload(HelloPayload.self)
                return .serverHello(name: hello.name, connectionReason: hello.connectionReason)
            case "server/activate": return .serverActivate(try payload(SendspinActivation.self))
            case "server/time": return .serverTime(try payload(SendspinTimeReply.self))
            case "stream/start": return .streamStart(try payload(StreamStartPayload.self).player)
            case "stream/clear": return .streamClear(roles: try payload(RolesPayload.self).roles)
            case "stream/end": return .streamEnd(roles: try payload(RolesPayload.self).roles)
            case "server/command": return .serverCommand(try payload(CommandPayload.self).player)
            case "group/update": return .groupUpdate(try payload(SendspinGroup.self))
            case "server/state": return .serverState(try payload(SendspinServerState.self))
            case "noise/handshake":
                guard let bytes = Base64URL.decode(try payload(HandshakePayload.self).data) else {
                    throw SendspinError(.malformedMessage, "noise/handshake data that is not base64url")
                }
                return .rehandshake(bytes)
            case "server/pair-init":
                guard let text = try payload(PairInitPayload.self).nonceA else { return .pairInit(nonceA: nil) }
                guard let nonce = Base64URL.decode(text) else {
                    throw SendspinError(.malformedMessage, "server/pair-init nonce_A that is not base64url")
                }
                return .pairInit(nonceA: nonce)
            case "server/pair-auth":
                guard let share = Base64URL.decode(try payload(PairAuthPayload.self).share) else {
                    throw SendspinError(.malformedMessage, "server/pair-auth pake_msg_1 that is not base64url")
                }
                return .pairAuth(share)
            case "server/pair-confirm":
                guard let tag = Base64URL.decode(try payload(PairConfirmPayload.self).tag) else {
                    throw SendspinError(.malformedMessage, "server/pair-confirm server_kc that is not base64url")
                }
                return .pairConfirm(tag)
            case "server/pair-finalize": return .pairFinalized
            case "pair/abort": return .pairAborted(reason: (try? payload(AbortPayload.self))?.reason.map { String($0.prefix(32)) })
            case "server/unpair": return .unpair
            default: return .ignored(type: String(type.prefix(64)))
            }
        } catch {
            throw SendspinError(.malformedMessage, "a JSON message that does not parse: \(Self.describe(error))")
        }
    }

    private struct Envelope: Decodable { var type: String }
    private struct Body<P: Decodable>: Decodable { var payload: P }
    private struct HelloPayload: Decodable {
        var name: String
        /// `discovery` or `playback`: why a server that dialed this player did so.
        var connectionReason: String?
        enum CodingKeys: String, CodingKey {
            case name
            case connectionReason = "connection_reason"
        }
    }
    private struct StreamStartPayload: Decodable { var player: SendspinStreamFormat? }
    private struct RolesPayload: Decodable { var roles: [String]? }
    private struct CommandPayload: Decodable { var player: SendspinPlayerCommand? }
    private struct HandshakePayload: Decodable { var data: String }
    private struct AbortPayload: Decodable { var reason: String? }
    private struct PairInitPayload: Decodable {
        var nonceA: String?
        enum CodingKeys: String, CodingKey { case nonceA = "nonce_A" }
    }
    private struct PairAuthPayload: Decodable {
        var share: String
        enum CodingKeys: String, CodingKey { case share = "pake_msg_1" }
    }
    private struct PairConfirmPayload: Decodable {
        var tag: String
        enum CodingKeys: String, CodingKey { case tag = "server_kc" }
    }

    /// The decoder's reason in one short line (its descriptions can be long).
    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "no '\(key.stringValue)'"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "'\(context.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type"
        case DecodingError.dataCorrupted(let context):
            context.codingPath.isEmpty ? "not JSON" : "'\(context.codingPath.map(\.stringValue).joined(separator: "."))' is invalid"
        default: "\(error)".prefix(120).description
        }
    }
}

/// `server/activate`: what the server uses this connection for.
struct SendspinActivation: Decodable, Sendable, Equatable {
    var activities: [String]
    /// Nil: the roles of the previous activation stay (none on the first).
    var activeRoles: [String]?
    /// The pairing attempt an activation with `pairing` admits.
    var pairing: Pairing?

    struct Pairing: Decodable, Sendable, Equatable {
        /// `pairing_psk`, or a pairing-code method.
        var method: String
        /// The dynamic code's emission format (`digits`).
        var format: String?
    }

    enum CodingKeys: String, CodingKey {
        case activities
        case activeRoles = "active_roles"
        case pairing
    }
}

/// `server/time`: the four timestamps of one exchange but our receive time.
struct SendspinTimeReply: Decodable, Sendable, Equatable {
    var clientTransmitted: Int64
    var serverReceived: Int64
    var serverTransmitted: Int64

    enum CodingKeys: String, CodingKey {
        case clientTransmitted = "client_transmitted"
        case serverReceived = "server_received"
        case serverTransmitted = "server_transmitted"
    }
}

/// The `player` object of `stream/start`.
struct SendspinStreamFormat: Decodable, Sendable, Equatable {
    var codec: String
    var sampleRate: Int
    var channels: Int
    var bitDepth: Int
    /// Standard base64 (FLAC: `fLaC` and STREAMINFO).
    var codecHeader: String?

    enum CodingKeys: String, CodingKey {
        case codec
        case sampleRate = "sample_rate"
        case channels
        case bitDepth = "bit_depth"
        case codecHeader = "codec_header"
    }
}

/// The `player` object of `server/command`.
struct SendspinPlayerCommand: Decodable, Sendable, Equatable {
    var command: String
    var volume: Int?
    var mute: Bool?
    var outputDelayMs: Int?

    enum CodingKeys: String, CodingKey {
        case command, volume, mute
        case outputDelayMs = "output_delay_ms"
    }
}

/// `group/update`.
struct SendspinGroup: Decodable, Sendable, Equatable {
    var playbackState: String?
    var groupID: String?
    var groupName: String?

    enum CodingKeys: String, CodingKey {
        case playbackState = "playback_state"
        case groupID = "group_id"
        case groupName = "group_name"
    }
}
