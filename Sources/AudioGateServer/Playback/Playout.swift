import AudioGateCore

/// A playback stream's audio, by its policy: the queue of audio that plays as it arrives, or the
/// timed playout of a network player's chunks. A stream's policy never changes, so neither does
/// the case.
///
/// Kept under its stream's lock; `PlaybackStream.State.updatePlayout` runs transitions on the
/// payload, an object, in place: the enum holds one reference, so reading or switching it costs
/// a retain, not a copy of the queue's fields (the device thread does it every period).
enum Playout {
    case queued(PlayoutQueue)
    case timed(TimedPlayout)

    init(policy: PlayoutPolicy, format: AudioFormat, limitSeconds: Int) {
        switch policy {
        case .queued: self = .queued(PlayoutQueue(format: format, limitSeconds: limitSeconds))
        case .timed: self = .timed(TimedPlayout(format: format, limitSeconds: limitSeconds))
        }
    }

    var policy: PlayoutPolicy {
        switch self {
        case .queued: .queued
        case .timed: .timed
        }
    }

    /// Frames waiting for the mixer, at the mix rate.
    var queued: QueuedAudio {
        switch self {
        case .queued(let queue): QueuedAudio(frames: queue.frames, rate: queue.rate)
        case .timed(let timed): QueuedAudio(frames: timed.frames, rate: timed.rate)
        }
    }

    var isEmpty: Bool {
        switch self {
        case .queued(let queue): queue.isEmpty
        case .timed(let timed): timed.isEmpty
        }
    }

    /// Nothing queued, and a timed playout not playing.
    var isIdle: Bool {
        switch self {
        case .queued(let queue): queue.isEmpty
        case .timed(let timed): timed.isEmpty && !timed.playing
        }
    }

    /// A timed playout's figures; nil for queued audio.
    var statistics: TimedPlaybackStatistics? {
        switch self {
        case .queued: nil
        case .timed(let timed): timed.statistics
        }
    }
}
