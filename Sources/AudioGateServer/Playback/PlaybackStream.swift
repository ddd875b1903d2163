import AudioGateCore
import AudioGateDevices
import Synchronization

/// One named playback stream: the mixer renders it on the device thread; producers feed it through
/// a `PlaybackIngest` each, which converts their audio to the mix format on the network side.
///
/// Its `policy` (the case of its `Playout`) says how audio is timed: queued audio plays as it
/// arrives (several producers may feed the same name, one after the other, and every listener sees
/// its `cleared` and `drained` events); timed audio (a network player's) leaves the loudspeaker at each chunk's presentation
/// time. Either way the stream has one render, one gain, one clear and the same back-pressure.
/// Positions are counted in frames of the mix format from the stream's creation.
public final class PlaybackStream: Sendable {
    /// The stream's name (`?stream=`).
    public let name: String
    /// Queued or timed: the case of the stream's `Playout`, which no transition changes. Kept
    /// outside the lock, since the device thread asks every period (`PlaybackMixer.needsDevice`).
    public let policy: PlayoutPolicy
    let quality: Resampler.Quality
    let metrics: PlaybackMetrics
    /// Most marks waiting to be heard; more are refused (`addMark`).
    let maxPendingMarks: Int
    /// Shared with the device thread; every critical section is a copy or a few counters.
    let state: Mutex<State>
    private let roleIsMusic: Atomic<Bool>
    /// Woken when audio arrives for a timed stream that had none: it holds no user of the device.
    let demand: DeviceDemand?

    /// Voice (the default) or music, which is lowered while a voice plays.
    public internal(set) var role: PlaybackRole {
        get { roleIsMusic.load(ordering: .relaxed) ? .music : .voice }
        set { roleIsMusic.store(newValue == .music, ordering: .relaxed) }
    }

    struct State {
        /// The audio, queued or timed.
        var playout: Playout
        var timeline = PlaybackTimeline()
        var listeners: [PlaybackListener] = []
        /// Events made under the lock, sent in that order once it is let go.
        var outbox = PlaybackOutbox()
        /// The stream's own gain (a network player's volume), ramped at each change.
        var targetGain: Float = 1
        var gain: Float = 1
        /// A client's `pause`: the queued policy renders nothing and keeps its queue.
        var paused = false
        /// What a clear cut off, fading out before anything else of the stream plays.
        var fadeTail = FadeTail()
    }

    init(
        name: String, mixFormat: AudioFormat, limitSeconds: Int, quality: Resampler.Quality, metrics: PlaybackMetrics,
        role: PlaybackRole = .voice, maxPendingMarks: Int, policy: PlayoutPolicy = .queued, demand: DeviceDemand? = nil
    ) {
        self.name = name
        self.demand = demand
        self.maxPendingMarks = maxPendingMarks
        roleIsMusic = Atomic(role == .music)
        self.quality = quality
        self.metrics = metrics
        let playout = Playout(policy: policy, format: mixFormat, limitSeconds: limitSeconds)
        self.policy = playout.policy
        state = Mutex(State(playout: playout))
    }

    // MARK: - Readers

    /// Queued frames not yet taken by the mixer, at the mix rate.
    public var queued: QueuedAudio {
        state.withLock { $0.playout.queued }
    }

    /// Queued audio in milliseconds.
    public var queuedMilliseconds: Double { queued.milliseconds }

    /// Underruns counted on this stream: a queue that ran dry mid-audio, or a timed playout that did.
    public var underruns: Int {
        state.withLock { $0.timeline.underruns + ($0.playout.statistics?.underruns ?? 0) }
    }

    /// Nothing queued and everything rendered was heard.
    var isIdle: Bool {
        state.withLock { $0.playout.isIdle && $0.timeline.allRenderedHeard }
    }

    /// A timed stream's sync figures since its creation; nil for a queued stream.
    public var timing: TimedPlaybackStatistics? {
        state.withLock { state in
            guard var statistics = state.playout.statistics else { return nil }
            statistics.bufferedMilliseconds = state.playout.queued.milliseconds
            return statistics
        }
    }

    /// Frames heard since creation (mix frames).
    public var playedFrames: UInt64 { state.withLock { $0.timeline.playedTotal } }

    /// How many times the stream was cleared.
    var clearCount: Int { state.withLock { $0.timeline.clears } }

    /// The names of the marks not yet heard, oldest first.
    var pendingMarks: [String] { state.withLock { $0.timeline.pendingMarkNames } }

    // MARK: - Listeners

    func addListener(_ listener: PlaybackListener) {
        state.withLock { $0.listeners.append(listener) }
    }

    func removeListener(_ listener: PlaybackListener) {
        state.withLock { state in
            state.listeners.removeAll { $0 === listener }
            state.timeline.forgetMarks(of: listener.id)
            // Nobody is left to resume it: what it queued plays out.
            if state.listeners.isEmpty { state.paused = false }
        }
        listener.finish()
    }
}

/// Audio a stream holds that the mixer has not taken yet.
public struct QueuedAudio: Sendable, Equatable {
    public var frames: Int
    /// The mix rate the frames are at.
    public var rate: Int

    public var milliseconds: Double { rate > 0 ? Double(frames) * 1000 / Double(rate) : 0 }
}

extension PlaybackStream.State {
    /// Runs the transition of the stream's policy, `queued` or `timed`, on its playout and timeline.
    /// A transition changes the payload object in place; a timed one may replace it (a format
    /// change rebuilds it). The queue is never replaced, so the device thread's every period does
    /// not write the enum back.
    mutating func updatePlayout<Outcome>(
        queued: (PlayoutQueue, inout PlaybackTimeline) -> Outcome,
        timed: (inout TimedPlayout, inout PlaybackTimeline) -> Outcome
    ) -> Outcome {
        switch playout {
        case .queued(let queue):
            return queued(queue, &timeline)
        case .timed(var timedPlayout):
            defer { playout = .timed(timedPlayout) }
            return timed(&timedPlayout, &timeline)
        }
    }

    /// A queued-only transition. Queued audio comes from `PlaybackIngest.offer(_:format:slices:)`
    /// and its `finish`, whose streams come from `PlaybackMixer.acquire`, which never hands out a
    /// timed stream.
    mutating func updateQueue<Outcome>(_ body: (PlayoutQueue, inout PlaybackTimeline) -> Outcome) -> Outcome {
        updatePlayout(queued: body, timed: { _, _ in preconditionFailure("queued audio for a timed stream") })
    }

    /// A timed-only transition. Timed chunks come from an ingest made by `PlaybackIngest.timed`,
    /// which takes timed streams only.
    mutating func updateTimed<Outcome>(_ body: (inout TimedPlayout, inout PlaybackTimeline) -> Outcome) -> Outcome {
        updatePlayout(queued: { _, _ in preconditionFailure("a timed chunk for a queued stream") }, timed: body)
    }
}
