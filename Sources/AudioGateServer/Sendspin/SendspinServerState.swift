/// `server/state`: the role objects the server keeps this connection up to date with. Each one
/// present replaces what came before wholesale; one left out stays as it was.
struct SendspinServerState: Decodable, Sendable, Equatable {
    /// What is playing (`metadata@v1`).
    var metadata: Metadata?
    /// What the group's controller may do, and the group's volume (`controller@v1`).
    var controller: Controller?

    /// The `metadata` object: every field optional, as the server knows them.
    struct Metadata: Decodable, Sendable, Equatable {
        /// Server clock, microseconds, at which the object (and its progress) holds.
        var timestamp: Int64?
        var title: String?
        var artist: String?
        var albumArtist: String?
        var album: String?
        var artworkUrl: String?
        var year: Int?
        var track: Int?
        var progress: Progress?

        enum CodingKeys: String, CodingKey {
            case timestamp, title, artist, album, year, track, progress
            case albumArtist = "album_artist"
            case artworkUrl = "artwork_url"
        }
    }

    /// Where the track was at the metadata's timestamp.
    struct Progress: Decodable, Sendable, Equatable {
        var trackProgress: Int
        /// 0: unknown or unlimited (a live stream).
        var trackDuration: Int
        /// Speed times 1000: 1000 plays, 0 is paused.
        var playbackSpeed: Int

        enum CodingKeys: String, CodingKey {
            case trackProgress = "track_progress"
            case trackDuration = "track_duration"
            case playbackSpeed = "playback_speed"
        }
    }

    /// The `controller` object.
    struct Controller: Decodable, Sendable, Equatable {
        var supportedCommands: [String]
        var volume: Int
        var muted: Bool
        var repeatMode: String?
        var shuffle: Bool?

        enum CodingKeys: String, CodingKey {
            case volume, muted, shuffle
            case supportedCommands = "supported_commands"
            case repeatMode = "repeat"
        }
    }
}
