/// The Sendspin player in `/v1/status` (`sendspin`); absent when it is off.
struct SendspinStatus: Encodable, Equatable {
    /// Through the Noise handshake and activated by the server.
    var connected: Bool
    /// The server's URL.
    var server: String
    /// The name the server gave in `server/hello`.
    var serverName: String?
    /// The server's identity (its static key, base64url), once a handshake got that far.
    var serverId: String?
    /// The time filter has converged: the player reports itself available and plays chunks.
    var clockConverged: Bool
    /// Server clock minus local clock now, milliseconds (the time filter's offset and drift).
    var clockOffsetMs: Double?
    /// The filter's standard deviation of that offset, milliseconds.
    var clockErrorMs: Double?
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
    /// Audio held by the timed stream, milliseconds.
    var queuedMs: Double
    var framesDropped: UInt64
    var framesInserted: UInt64
    var lateChunks: UInt64
    var resyncs: UInt64
    /// Last period: played time minus presentation time, milliseconds (null when not playing).
    var playOffsetMs: Double?
    /// Connections made since start (a reconnect adds one).
    var connections: Int
    /// Why the last connection ended or failed.
    var lastError: String?
}

/// The Sendspin settings in `/v1/info` (`sendspin`); absent when the player is off.
struct SendspinInfo: Encodable, Equatable {
    var server: String
    var name: String
    var stream: String
    var outputDelayMs: Int
    var codecs: [String]
}

extension SendspinClient {
    /// The player's state for `/v1/status`.
    var status: SendspinStatus {
        let state = state.withLock { $0 }
        let statistics = state.stream?.timing
        return SendspinStatus(
            connected: state.connected, server: server, serverName: state.serverName, serverId: state.serverID,
            clockConverged: clock.isSynchronized, clockOffsetMs: clock.offsetMicroseconds.map { $0 / 1000 },
            clockErrorMs: clock.errorMicroseconds.map { $0 / 1000 }, codec: state.codec, rate: state.format?.sampleRate,
            channels: state.format?.channels, bitDepth: state.format?.bitDepth, volume: state.volume, muted: state.muted,
            outputDelayMs: state.outputDelayMilliseconds, playbackState: state.playbackState,
            queuedMs: statistics?.bufferedMilliseconds ?? 0, framesDropped: UInt64(statistics?.framesDropped ?? 0),
            framesInserted: UInt64(statistics?.framesInserted ?? 0), lateChunks: UInt64(statistics?.lateChunks ?? 0),
            resyncs: UInt64(statistics?.resyncs ?? 0), playOffsetMs: statistics?.offsetMicroseconds.map { $0 / 1000 },
            connections: state.connections, lastError: state.lastError)
    }

    /// The settings for `/v1/info`.
    var info: SendspinInfo {
        SendspinInfo(
            server: server, name: configuration.name, stream: configuration.stream,
            outputDelayMs: configuration.outputDelayMilliseconds, codecs: configuration.codecs.map(\.rawValue))
    }
}
