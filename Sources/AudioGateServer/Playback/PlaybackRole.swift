/// What a playback stream carries: the agent's voice, or music that is lowered while a voice plays.
public enum PlaybackRole: String, Sendable, Codable, CaseIterable {
    case voice
    case music
}
