/// The Snapcast client in `/v1/status` (`snapcast`); null when it is off.
struct SnapcastStatus: Encodable, Equatable {
    /// Connected to the server and told its settings.
    var connected: Bool
    /// `HOST:PORT` of the server.
    var server: String
    /// Server minus local clock, milliseconds (the median of the recent Time exchanges).
    var clockOffsetMs: Double?
    /// Median absolute deviation of the recent Time exchanges from that median, milliseconds.
    var clockJitterMs: Double?
    /// The server's buffer (how far ahead chunks are stamped), milliseconds.
    var bufferMs: Int?
    /// Audio held by the timed stream, milliseconds.
    var queuedMs: Double
    /// `pcm`, `flac`, `ogg` or `opus`, once the server sent its codec header.
    var codec: String?
    /// Rate and channels of the decoded audio.
    var rate: Int?
    var channels: Int?
    /// Volume 0-100 and mute as the server set them.
    var volume: Int?
    var muted: Bool?
    /// Single frames dropped and inserted to follow the server's clock.
    var framesDropped: UInt64
    var framesInserted: UInt64
    /// Chunks that arrived too late to play, and resyncs.
    var lateChunks: UInt64
    var resyncs: UInt64
    /// Last period: played time minus presentation time, milliseconds (null when not playing).
    var playOffsetMs: Double?
    /// Connections made since start (a reconnect adds one).
    var connections: Int
    /// Why the last connection ended or failed.
    var lastError: String?
}

/// The Snapcast settings in `/v1/info` (`snapcast`); null when the client is off.
struct SnapcastInfo: Encodable, Equatable {
    var server: String
    var name: String
    var id: String
    var stream: String
    var latencyMs: Int
}
