/// The Snapcast client's own fields in `/v1/status` (`snapcast`, a `PlayerStatus`: connected once
/// told the server's settings, `server` as `HOST:PORT`, the clock offset the median of the recent
/// Time exchanges); null when it is off.
struct SnapcastStatus: Encodable, Equatable {
    /// Median absolute deviation of the recent Time exchanges from that median, milliseconds.
    var clockJitterMs: Double?
    /// The server's buffer (how far ahead chunks are stamped), milliseconds.
    var bufferMs: Int?
    /// `pcm`, `flac`, `ogg` or `opus`, once the server sent its codec header.
    var codec: String?
    /// Rate and channels of the decoded audio.
    var rate: Int?
    var channels: Int?
    /// Volume 0-100 and mute as the server set them.
    var volume: Int?
    var muted: Bool?
}

/// The Snapcast settings in `/v1/info` (`snapcast`); null when the client is off.
struct SnapcastInfo: Encodable, Equatable {
    var server: String
    var name: String
    var id: String
    var stream: String
    var latencyMs: Int
}
