/// How a playback stream times its audio.
public enum PlayoutPolicy: Sendable, Equatable {
    /// Plays as it arrives, after a short jitter buffer (`PlayoutQueue` and `PlaybackTimeline`).
    case queued
    /// Each chunk leaves the loudspeaker at its presentation time (`TimedPlayout`): a network player.
    case timed
}
