import AudioGateCore

/// A playback stream's audio, by its policy: the queue of audio that plays as it arrives, or the
/// timed playout of a network player's chunks. A stream's policy never changes, so neither does
/// the case.
///
/// A value kept under its stream's lock; `PlaybackStream.State.updatePlayout` runs transitions on
/// the payload in place.
enum Playout {
    case queued(PlayoutQueue)
    case timed(TimedPlayout)
    /// Only while a transition holds the payload (swift-nio's `modifying` state): mutated inside
    /// the enum, the payload's arrays would be copied, on the device thread too.
    case modifying

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
        case .modifying: Self.inTransition()
        }
    }

    /// Frames waiting for the mixer, at the mix rate.
    var queued: QueuedAudio {
        switch self {
        case .queued(let queue): QueuedAudio(frames: queue.frames, rate: queue.rate)
        case .timed(let timed): QueuedAudio(frames: timed.frames, rate: timed.rate)
        case .modifying: Self.inTransition()
        }
    }

    var isEmpty: Bool {
        switch self {
        case .queued(let queue): queue.isEmpty
        case .timed(let timed): timed.isEmpty
        case .modifying: Self.inTransition()
        }
    }

    /// Nothing queued, and a timed playout not playing.
    var isIdle: Bool {
        switch self {
        case .queued(let queue): queue.isEmpty
        case .timed(let timed): timed.isEmpty && !timed.playing
        case .modifying: Self.inTransition()
        }
    }

    /// A timed playout's figures; nil for queued audio.
    var statistics: TimedPlaybackStatistics? {
        switch self {
        case .queued: nil
        case .timed(let timed): timed.statistics
        case .modifying: Self.inTransition()
        }
    }

    /// The payload is read only outside transitions, which hold the stream's lock from start to end.
    private static func inTransition() -> Never {
        preconditionFailure("a stream's playout was read while a transition held it")
    }
}
