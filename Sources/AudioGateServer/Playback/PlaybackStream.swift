import AudioGateCore
import AudioGateDevices
import Synchronization

/// One named playback queue: client audio decoded, remixed to the hardware channels and resampled
/// to the hardware rate on the network side, played by the mixer on the device thread.
///
/// Several connections may feed the same stream name; their audio is queued one after the other
/// and they all see its `cleared` and `drained` events. Positions are counted in frames of the
/// mix format from the stream's creation.
public final class PlaybackStream: Sendable {
    /// The stream's name (`?stream=`).
    public let name: String
    let limitSeconds: Int
    let quality: Resampler.Quality
    let metrics: PlaybackMetrics
    let input: Mutex<InputState>
    let queue: Mutex<QueueState>

    /// Network-side conversion state; lock order is always `input`, then `queue`.
    struct InputState {
        var resampler: Resampler?
        var clientRate = 0
        var clientChannels = 0
        var mixRate = 0
        var mixChannels = 0
        var decoded: [Float] = []
        var resampled: [Float] = []
        var remixed: [Float] = []
        /// Stream frame where the current resampler began, and client frames fed to it since.
        var segmentBase: UInt64 = 0
        var segmentInputFrames: UInt64 = 0
    }

    /// What one render contributed: device frames [deviceStart, +count) carried stream frames [streamStart, +count).
    struct Record {
        var deviceStart: UInt64 = 0
        var streamStart: UInt64 = 0
        var count: UInt64 = 0
    }

    struct PendingMark {
        var position: UInt64
        var name: String
        var listener: Int
    }

    struct LatencyProbe {
        var position: UInt64
        var startNanoseconds: UInt64
        var deviceFrame: UInt64?
    }

    /// Shared with the device thread; every critical section is a copy or a few counters.
    struct QueueState {
        var ring: RingBuffer<Float>
        var rate: Int
        var channels: Int
        /// Frames ever queued; the next queued frame's position.
        var queuedTotal: UInt64 = 0
        /// Position of the next frame the mixer takes (skips flushed audio).
        var renderedTotal: UInt64 = 0
        /// Frames heard (left the speaker, counting the card's delay).
        var playedTotal: UInt64 = 0
        /// `renderedTotal` at the last clear: `played_ms` counts from here.
        var clearBase: UInt64 = 0
        /// Clears so far, so a producer can tell its audio was flushed while it waited.
        var clears = 0
        var records = [Record](repeating: Record(), count: 64)
        var recordHead = 0
        var recordCount = 0
        var marks: [PendingMark] = []
        var listeners: [PlaybackListener] = []
        var probes: [LatencyProbe] = []
        var clearProbe: (deviceEnd: UInt64, startNanoseconds: UInt64)?
        /// Audio arrived since the last `drained`.
        var drainPending = false
        /// The mixer got audio from this stream in the last period.
        var active = false
        /// Where and when the queue ran dry mid-audio (cleared by new audio or a boundary).
        var dry: (position: UInt64, nanoseconds: UInt64)?
        /// The last position a mark or the end of an upload was placed at (0: none yet).
        var boundary: UInt64 = 0
        var underruns = 0
        var flushedByReformat: UInt64 = 0
        /// When audio first arrived for an idle stream: playback starts once the jitter buffer
        /// holds `prebufferNanoseconds` of audio or that long has passed.
        var startPendingSince: UInt64?
        /// A mark or the end of an upload: nothing more is coming soon, start without prebuffering.
        var startNow = false
    }

    init(name: String, mixFormat: AudioFormat, limitSeconds: Int, quality: Resampler.Quality, metrics: PlaybackMetrics) {
        self.name = name
        self.limitSeconds = max(limitSeconds, 1)
        self.quality = quality
        self.metrics = metrics
        input = Mutex(InputState())
        let ring = Self.makeRing(mixFormat, limitSeconds: self.limitSeconds)
        queue = Mutex(QueueState(ring: ring, rate: mixFormat.rate, channels: mixFormat.channels))
    }

    /// Room for the limit plus one slice and a resampler tail, so a write after the wait always fits.
    static func makeRing(_ format: AudioFormat, limitSeconds: Int) -> RingBuffer<Float> {
        // The bound is minutes of audio; storage grows only as far as a client really queues. It
        // starts at a quarter second: a real-time sender keeps tens of milliseconds queued, and a
        // ring it cycles through in a second would push each message's writes out of the cache.
        RingBuffer(
            capacity: (limitSeconds + 1) * format.rate * format.channels + 4096 * format.channels,
            initialCapacity: format.rate / 4 * format.channels)
    }

    /// Slices of client audio converted in one go: half a second keeps each lock hold short.
    static let sliceSeconds = 0.5
    /// Jitter buffer for a stream starting from silence: chunks that arrive up to this late still play gaplessly.
    static let prebufferNanoseconds: UInt64 = 40_000_000
    /// A gap shorter than this between running dry and new audio is an underrun (a listener heard a hole).
    static let underrunWindowNanoseconds: UInt64 = 2_000_000_000

    // MARK: - Readers

    /// Queued frames not yet taken by the mixer, and the mix rate.
    public var queued: (frames: Int, rate: Int) {
        queue.withLock { ($0.ring.count / max($0.channels, 1), $0.rate) }
    }

    /// Queued audio in milliseconds.
    public var queuedMilliseconds: Double {
        let (frames, rate) = queued
        return rate > 0 ? Double(frames) * 1000 / Double(rate) : 0
    }

    /// Underruns counted on this stream.
    public var underruns: Int { queue.withLock { $0.underruns } }

    /// Nothing queued and everything rendered was heard.
    var isIdle: Bool {
        queue.withLock { $0.ring.isEmpty && $0.recordCount == 0 }
    }

    /// Frames heard since creation (mix frames).
    public var playedFrames: UInt64 { queue.withLock { $0.playedTotal } }

    // MARK: - Listeners

    func addListener(_ listener: PlaybackListener) {
        queue.withLock { $0.listeners.append(listener) }
    }

    func removeListener(_ listener: PlaybackListener) {
        queue.withLock { state in
            state.listeners.removeAll { $0 === listener }
            state.marks.removeAll { $0.listener == listener.id }
        }
        listener.finish()
    }
}
