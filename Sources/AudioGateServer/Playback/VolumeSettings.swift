/// `GET/PUT /v1/volume`: playback gain (linear, 0...1) and mute.
public struct VolumeSettings: Codable, Sendable, Equatable {
    /// Linear gain applied to the mix; 0.5 is -6 dB.
    public var playback: Double
    /// Silences the output without forgetting the gain.
    public var muted: Bool

    public init(playback: Double = 1, muted: Bool = false) {
        self.playback = playback
        self.muted = muted
    }
}

/// A `PUT /v1/volume` body: either field may be left out.
struct VolumeUpdate: Decodable {
    var playback: Double?
    var muted: Bool?
}
