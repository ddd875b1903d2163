import Foundation

/// The JSON messages the player sends, each `{"type": ..., "payload": {...}}`.
enum SendspinOutbound {
    /// `client/init`, the cleartext opening: our identity, protocol version 1 and the suite.
    static func clientInit(clientID: String, suite: NoiseCipherSuite) -> String {
        encode("client/init", ClientInit(clientID: clientID, version: 1, suite: suite.rawValue))
    }

    /// `noise/handshake` carrying one Noise message.
    static func handshake(_ message: [UInt8]) -> String {
        encode("noise/handshake", HandshakeData(data: Base64URL.encode(message)))
    }

    /// The roles offered: a player that also shows what plays and passes on commands.
    static let roles = ["player@v1", "metadata@v1", "controller@v1"]

    /// `client/hello` for `roles`, the player with `formats` in priority order; the static pairing
    /// code is offered when the player has one.
    static func clientHello(
        name: String, version: String, formats: [SendspinFormat], bufferCapacity: Int, staticPairingCode: Bool = false
    ) -> String {
        let support = PlayerSupport(supportedFormats: formats, bufferCapacity: bufferCapacity)
        var methods = ["pairing_psk": PairMethod(), "dynamic_pairing_code": PairMethod(outChannels: ["display", "speaker"], formats: ["digits"])]
        if staticPairingCode { methods["static_pairing_code"] = PairMethod() }
        return encode(
            "client/hello",
            ClientHello(
                name: name, deviceInfo: DeviceInfo(productName: "audiogate", softwareVersion: version),
                supportedRoles: roles, playerSupport: support, supportedPairMethods: methods,
                unpairedAccess: UnpairedAccess(enabled: true)))
    }

    /// `client/state` with the `player` object.
    static func clientState(available: Bool, player: SendspinPlayerState) -> String {
        encode("client/state", ClientState(available: available, player: player))
    }

    /// `client/command` with the `controller` object.
    static func clientCommand(_ command: SendspinCommand) -> String {
        encode("client/command", ClientCommand(controller: command))
    }

    /// `client/time` stamped `now` (our microseconds).
    static func clientTime(_ now: Int64) -> String {
        encode("client/time", ClientTime(clientTransmitted: now))
    }

    /// `client/goodbye` with `reason`.
    static func goodbye(_ reason: String) -> String {
        encode("client/goodbye", Goodbye(reason: reason))
    }

    /// `client/pair-init`: starts the attempt of the `pairingIndex`th pairing activation since the
    /// handshake (with the dynamic code, committing to the player's nonce).
    static func pairInit(pairingIndex: Int, commit: [UInt8]? = nil) -> String {
        encode("client/pair-init", PairInit(pairingIndex: pairingIndex, commit: commit.map(Base64URL.encode)))
    }

    /// `client/pair-retry`: the dynamic code did not match this round; the server may run another.
    static func pairRetry() -> String {
        encode("client/pair-retry", Empty())
    }

    /// `client/pair-finalize` of the Pairing PSK method: the long-term PSK this player made for the server.
    static func pairFinalize(longTermPSK: [UInt8]) -> String {
        encode("client/pair-finalize", PairFinalize(longTermPSK: Base64URL.encode(longTermPSK), wrappedPSK: nil))
    }

    /// `client/pair-pending`: the attempt waits for the operator to open a pairing window.
    static func pairPending(pairingIndex: Int, message: String) -> String {
        encode("client/pair-pending", PairPending(pairingIndex: pairingIndex, message: message))
    }

    /// `client/pair-auth`: this player's CPace share.
    static func pairAuth(share: [UInt8]) -> String {
        encode("client/pair-auth", PairAuth(pakeMessage: Base64URL.encode(share)))
    }

    /// `client/pair-confirm`: this player's CPace confirmation tag (and, dynamic, its wrapped nonce).
    static func pairConfirm(tag: [UInt8], wrappedNonce: [UInt8]? = nil) -> String {
        encode("client/pair-confirm", PairConfirm(clientKC: Base64URL.encode(tag), wrappedNonce: wrappedNonce.map(Base64URL.encode)))
    }

    /// `client/pair-finalize` of a pairing-code method: the long-term PSK, wrapped under the code's key.
    static func pairFinalize(wrappedPSK: [UInt8]) -> String {
        encode("client/pair-finalize", PairFinalize(longTermPSK: nil, wrappedPSK: Base64URL.encode(wrappedPSK)))
    }

    /// `pair/abort`: a pairing activation this player cannot follow.
    static func pairAbort(_ reason: String) -> String {
        encode("pair/abort", Goodbye(reason: reason))
    }

    private struct Envelope<P: Encodable>: Encodable {
        var type: String
        var payload: P
    }

    private static func encode<P: Encodable>(_ type: String, _ payload: P) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every payload here is plain strings, integers and booleans: encoding cannot fail.
        let data = (try? encoder.encode(Envelope(type: type, payload: payload))) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    private struct ClientInit: Encodable {
        var clientID: String
        var version: Int
        var suite: String
        enum CodingKeys: String, CodingKey {
            case clientID = "client_id"
            case version, suite
        }
    }

    private struct HandshakeData: Encodable { var data: String }

    private struct DeviceInfo: Encodable {
        var productName: String
        var softwareVersion: String
        enum CodingKeys: String, CodingKey {
            case productName = "product_name"
            case softwareVersion = "software_version"
        }
    }

    private struct PlayerSupport: Encodable {
        var supportedFormats: [SendspinFormat]
        var bufferCapacity: Int
        enum CodingKeys: String, CodingKey {
            case supportedFormats = "supported_formats"
            case bufferCapacity = "buffer_capacity"
        }
    }

    private struct UnpairedAccess: Encodable { var enabled: Bool }

    /// A pairing method's descriptor: the dynamic code's channels (the player shows it in its
    /// status and log, and says it on its loudspeaker) and formats; the secret methods' optional `locations` hint is not given.
    private struct PairMethod: Encodable {
        var outChannels: [String]?
        var formats: [String]?
        enum CodingKeys: String, CodingKey {
            case outChannels = "out_channels"
            case formats
        }
    }

    private struct PairInit: Encodable {
        var pairingIndex: Int
        var commit: String?
        enum CodingKeys: String, CodingKey {
            case pairingIndex = "pairing_index"
            case commit = "commit_B"
        }
    }

    private struct Empty: Encodable {}

    /// The PSK in the clear (Pairing PSK method) or wrapped under a code's key.
    private struct PairFinalize: Encodable {
        var longTermPSK: String?
        var wrappedPSK: String?
        enum CodingKeys: String, CodingKey {
            case longTermPSK = "long_term_psk"
            case wrappedPSK = "wrapped_psk"
        }
    }

    private struct PairPending: Encodable {
        var pairingIndex: Int
        var message: String
        enum CodingKeys: String, CodingKey {
            case pairingIndex = "pairing_index"
            case message
        }
    }

    private struct PairAuth: Encodable {
        var pakeMessage: String
        enum CodingKeys: String, CodingKey { case pakeMessage = "pake_msg_2" }
    }

    private struct PairConfirm: Encodable {
        var clientKC: String
        var wrappedNonce: String?
        enum CodingKeys: String, CodingKey {
            case clientKC = "client_kc"
            case wrappedNonce = "wrapped_nonce_B"
        }
    }

    private struct ClientHello: Encodable {
        var name: String
        var deviceInfo: DeviceInfo
        var supportedRoles: [String]
        var playerSupport: PlayerSupport
        var supportedPairMethods: [String: PairMethod]
        var unpairedAccess: UnpairedAccess
        enum CodingKeys: String, CodingKey {
            case name
            case deviceInfo = "device_info"
            case supportedRoles = "supported_roles"
            case playerSupport = "player@v1_support"
            case supportedPairMethods = "supported_pair_methods"
            case unpairedAccess = "unpaired_access"
        }
    }

    private struct ClientState: Encodable {
        var available: Bool
        var player: SendspinPlayerState
    }

    private struct ClientCommand: Encodable { var controller: SendspinCommand }

    private struct ClientTime: Encodable {
        var clientTransmitted: Int64
        enum CodingKeys: String, CodingKey { case clientTransmitted = "client_transmitted" }
    }

    private struct Goodbye: Encodable { var reason: String }
}

/// One entry of `supported_formats`.
struct SendspinFormat: Encodable, Sendable, Equatable {
    var codec: String
    var channels: Int
    var sampleRate: Int
    var bitDepth: Int

    enum CodingKeys: String, CodingKey {
        case codec, channels
        case sampleRate = "sample_rate"
        case bitDepth = "bit_depth"
    }

    /// What the player lists for `codecs` in order: 48 kHz stereo first, 16-bit before 24-bit
    /// (Opus has no bit depth: 16 stands for it).
    static func supported(codecs: [SendspinCodec]) -> [SendspinFormat] {
        codecs.flatMap { codec -> [SendspinFormat] in
            switch codec {
            case .opus:
                return [SendspinFormat(codec: "opus", channels: 2, sampleRate: 48000, bitDepth: 16)]
            case .pcm, .flac:
                return [48000, 44100].flatMap { rate in
                    [16, 24].map { SendspinFormat(codec: codec.rawValue, channels: 2, sampleRate: rate, bitDepth: $0) }
                }
            }
        }
    }
}

/// The `player` object of `client/state`.
struct SendspinPlayerState: Encodable, Sendable, Equatable {
    var volume: Int
    var muted: Bool
    var outputDelayMs: Int
    var requiredLeadTimeMs: Int
    var minBufferMs: Int
    var supportedCommands = ["volume", "mute", "set_output_delay"]

    enum CodingKeys: String, CodingKey {
        case volume, muted
        case outputDelayMs = "output_delay_ms"
        case requiredLeadTimeMs = "required_lead_time_ms"
        case minBufferMs = "min_buffer_ms"
        case supportedCommands = "supported_commands"
    }
}
