import AudioGateCore
import AudioGateDevices
import Synchronization

/// One named playback queue: the mixer plays it on the device thread; producers feed it through a
/// `PlaybackIngest` each, which converts their audio to the mix format on the network side.
///
/// Several producers may feed the same stream name; their audio is queued one after the other
/// and every listener sees its `cleared` and `drained` events. Positions are counted in frames of
/// the mix format from the stream's creation.
public final class PlaybackStream: Sendable {
    /// The stream's name (`?stream=`).
    public let name: String
    let quality: Resampler.Quality
    let metrics: PlaybackMetrics
    /// Most marks waiting to be heard; more are refused (`addMark`).
    let maxPendingMarks: Int
    /// Shared with the device thread; every critical section is a copy or a few counters.
    let state: Mutex<State>
    private let roleIsMusic: Atomic<Bool>

    /// Voice (the default) or music, which is lowered while a voice plays.
    public internal(set) var role: PlaybackRole {
        get { roleIsMusic.load(ordering: .relaxed) ? .music : .voice }
        set { roleIsMusic.store(newValue == .music, ordering: .relaxed) }
    }

    struct State {
        var queue: PlayoutQueue
        var timeline = PlaybackTimeline()
        var listeners: [PlaybackListener] = []
    }

    init(
        name: String, mixFormat: AudioFormat, limitSeconds: Int, quality: Resampler.Quality, metrics: PlaybackMetrics,
        role: PlaybackRole = .voice, maxPendingMarks: Int
    ) {
        self.name = name
        self.maxPendingMarks = maxPendingMarks
        roleIsMusic = Atomic(role == .music)
        self.quality = quality
        self.metrics = metrics
        state = Mutex(State(queue: PlayoutQueue(format: mixFormat, limitSeconds: limitSeconds)))
    }

    // MARK: - Readers

    /// Queued frames not yet taken by the mixer, and the mix rate.
    public var queued: (frames: Int, rate: Int) {
        state.withLock { ($0.queue.frames, $0.queue.rate) }
    }

    /// Queued audio in milliseconds.
    public var queuedMilliseconds: Double {
        let (frames, rate) = queued
        return rate > 0 ? Double(frames) * 1000 / Double(rate) : 0
    }

    /// Underruns counted on this stream.
    public var underruns: Int { state.withLock { $0.timeline.underruns } }

    /// Nothing queued and everything rendered was heard.
    var isIdle: Bool {
        state.withLock { $0.queue.isEmpty && $0.timeline.allRenderedHeard }
    }

    /// Frames heard since creation (mix frames).
    public var playedFrames: UInt64 { state.withLock { $0.timeline.playedTotal } }

    /// How many times the stream was cleared.
    var clearCount: Int { state.withLock { $0.timeline.clears } }

    /// The names of the marks not yet heard, oldest first.
    var pendingMarks: [String] { state.withLock { $0.timeline.marks.map(\.name) } }

    // MARK: - Listeners

    func addListener(_ listener: PlaybackListener) {
        state.withLock { $0.listeners.append(listener) }
    }

    func removeListener(_ listener: PlaybackListener) {
        state.withLock { state in
            state.listeners.removeAll { $0 === listener }
            state.timeline.marks.removeAll { $0.listener == listener.id }
        }
        listener.finish()
    }
}
