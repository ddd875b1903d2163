/// What is playing, in `/v1/status` (`sendspin.metadata`): the fields the server gave.
struct SendspinMetadataStatus: Encodable, Equatable {
    /// Longest text shown of a field.
    static let maximumText = 512

    var title: String?
    var artist: String?
    var albumArtist: String?
    var album: String?
    var artworkUrl: String?
    var year: Int?
    var track: Int?
    /// Where the track is now, milliseconds, carried forward from the server's report at its speed.
    var progressMs: Int?
    /// 0 for a live stream or an unknown length.
    var durationMs: Int?
    /// Speed times 1000: 1000 plays, 0 is paused.
    var playbackSpeed: Int?

    /// The server gave nothing to show (a server with no track information sends an empty object).
    var isEmpty: Bool {
        [title, artist, albumArtist, album, artworkUrl].allSatisfy { $0 == nil } && year == nil && track == nil
            && progressMs == nil
    }

    /// The server's metadata, its progress carried to `serverNow` (server clock, microseconds).
    init(_ metadata: SendspinServerState.Metadata, serverNow: Double?) {
        func text(_ value: String?) -> String? { value.map { String($0.prefix(Self.maximumText)) } }
        title = text(metadata.title)
        artist = text(metadata.artist)
        albumArtist = text(metadata.albumArtist)
        album = text(metadata.album)
        artworkUrl = text(metadata.artworkUrl)
        year = metadata.year
        track = metadata.track
        if let progress = metadata.progress {
            var position = Double(progress.trackProgress)
            if let serverNow, let timestamp = metadata.timestamp {
                position += max(0, serverNow - Double(timestamp)) / 1000 * Double(progress.playbackSpeed) / 1000
            }
            if progress.trackDuration > 0 { position = min(position, Double(progress.trackDuration)) }
            progressMs = position.isFinite ? Int(max(0, min(position, Double(Int32.max)))) : nil
            durationMs = progress.trackDuration
            playbackSpeed = progress.playbackSpeed
        }
    }
}
