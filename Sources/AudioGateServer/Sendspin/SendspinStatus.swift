import AudioGateCore

/// The Sendspin player's own fields in `/v1/status` (`sendspin`, a `PlayerStatus`: connected once
/// through the Noise handshake and activated, `server` its URL, the clock offset from the time
/// filter's offset and drift); absent when it is off.
struct SendspinStatus: Encodable, Equatable {
    /// `HOST:PORT` the player waits on for servers to dial it (`--sendspin-port`).
    var listening: String?
    /// Whether Avahi publishes the waiting player as `_sendspin._tcp` (absent for a dialing player).
    var advertised: Bool?
    /// The name the server gave in `server/hello`.
    var serverName: String?
    /// The server's identity (its static key, base64url), once a handshake got that far.
    var serverId: String?
    /// What the server uses the connection for (`playback` while its group plays or is about to).
    var activities: [String]
    /// The roles the server activated (`player@v1`, `metadata@v1`, `controller@v1`); none while a
    /// server that requires pairing has not paired this player.
    var roles: [String]
    /// The connection is keyed by the long-term PSK of a pairing with this server.
    var paired: Bool
    /// Servers this player is paired with (`audiogate sendspin-token` gives the token to pair).
    var pairedServers: Int
    /// The static pairing code's window (`POST /v1/sendspin/pairing`); absent without a code.
    var pairingWindow: SendspinPairingWindow.Status?
    /// The dynamic pairing code (`123-456`) to type into the server, while its attempt runs.
    var pairingCode: String?
    /// The time filter has converged: the player reports itself available and plays chunks.
    var clockConverged: Bool
    /// The filter's standard deviation of that offset, milliseconds.
    var clockErrorMs: Double?
    /// How much faster the server's clock runs than ours, parts per million (0 until significant).
    var clockDriftPpm: Double?
    /// `pcm`, `flac` or `opus`, once a stream started.
    var codec: String?
    var rate: Int?
    var channels: Int?
    var bitDepth: Int?
    /// Volume 0-100 and mute as the server set them.
    var volume: Int
    var muted: Bool
    /// Delay after the audio port taken off each chunk's time.
    var outputDelayMs: Int
    /// The group's `playing` or `stopped`.
    var playbackState: String?
    /// What is playing, once the server said (`metadata@v1`).
    var metadata: SendspinMetadataStatus?
    /// What `POST /v1/sendspin/command` may ask of the server (`controller@v1`).
    var controller: SendspinControllerStatus?
}

/// The Sendspin settings in `/v1/info` (`sendspin`); absent when the player is off.
struct SendspinInfo: Encodable, Equatable {
    /// The server dialed, or empty when servers dial the player.
    var server: String
    /// `HOST:PORT` servers dial, when they do.
    var listening: String?
    var name: String
    var stream: String
    var outputDelayMs: Int
    var codecs: [String]
}

extension SendspinClient {
    /// The player's state for `/v1/status`.
    var status: PlayerStatus<SendspinStatus> {
        let state = state.withLock { $0 }
        let player = SendspinStatus(
            listening: configuration.listen?.description, advertised: configuration.listen == nil ? nil : state.advertised,
            serverName: state.serverName, serverId: state.serverID, activities: state.activities, roles: state.roles, paired: state.paired, pairedServers: state.trust?.pairedServers ?? 0,
            pairingWindow: configuration.staticPairingCode == nil ? nil : pairingWindow.status, pairingCode: state.pairingCode?.code,
            clockConverged: clock.isSynchronized,
            clockErrorMs: clock.errorMicroseconds.map { $0 / 1000 }, clockDriftPpm: clock.driftPPM, codec: state.codec, rate: state.format?.sampleRate,
            channels: state.format?.channels, bitDepth: state.format?.bitDepth, volume: state.volume, muted: state.muted,
            outputDelayMs: state.outputDelayMilliseconds, playbackState: state.playbackState,
            metadata: state.metadata.map { metadata in
                SendspinMetadataStatus(
                    metadata, serverNow: clock.offsetMicroseconds.map { Double(MonotonicClock.nowNanoseconds() / 1000) + $0 })
            }.flatMap { $0.isEmpty ? nil : $0 },
            controller: state.controller.map(SendspinControllerStatus.init))
        return PlayerStatus(
            connected: state.connected, server: server, clockOffsetMs: clock.offsetMicroseconds.map { $0 / 1000 },
            player: player, playout: TimedPlayoutStatus(state.stream?.timing), connections: state.connections,
            lastError: state.lastError)
    }

    /// The settings for `/v1/info`.
    var info: SendspinInfo {
        SendspinInfo(
            server: configuration.url ?? "", listening: configuration.listen?.description, name: configuration.name, stream: configuration.stream,
            outputDelayMs: configuration.outputDelayMilliseconds, codecs: configuration.codecs.map(\.rawValue))
    }
}
