import AudioGateCore
import AudioGateDevices
import Foundation
import Logging
import Synchronization

/// Mixes the playback streams on the playback thread; silence when nothing is queued.
public final class PlaybackMixer: PlaybackSource {
    struct Entry {
        var stream: PlaybackStream
        var users: Int
    }

    /// Every stream by name, queued and timed alike: a name is one stream's.
    struct Registry {
        var entries: [String: Entry] = [:]
        /// What the device thread iterates: replaced (never mutated in place) so a render holds a stable copy.
        var list: [PlaybackStream] = []
        /// Whether any stream is music, so a render without music skips the voice check.
        var hasMusic = false
        /// Whether any stream is timed, so the output is dated only while one needs it.
        var hasTimed = false

        mutating func update() {
            hasMusic = list.contains { $0.role == .music }
            hasTimed = list.contains { $0.policy == .timed }
        }
    }

    /// Device-thread state: scratch space and the current gain of the volume ramp.
    struct RenderState {
        var scratch = PlaybackScratch(capacity: 0)
        /// One gain per frame while the ducking gain ramps.
        var curve = PlaybackScratch(capacity: 0)
        /// The output volume the last period ended at.
        var gain: Float = 1
        var lastPlayedDevice: UInt64 = 0
        var ducker: Ducker
    }

    let configuration: ServerConfiguration
    let logger: Logger
    let metrics: PlaybackMetrics
    /// Output volume and mute.
    public let volume = VolumeControl()
    /// What was written to the device, dated by when it plays: the echo cancellers' reference.
    public let echoReference = EchoReference()
    let registry = Mutex(Registry())
    let renderState: Mutex<RenderState>
    /// The playback loop's device clock as of its last write: dates device frames for timed streams.
    let deviceClock = Mutex(DeviceClock(tuning: .playback))
    /// Whether music is lowered (or ramping) under a voice, for readers.
    let duckingActive = Atomic<Bool>(false)
    let hardware: Mutex<NegotiatedFormat?> = Mutex(nil)
    /// Stops the playback device while nothing plays; acquiring a stream wakes it.
    public let demand: DeviceDemand
    /// The decoder threads of compressed files, bounded server-wide.
    public let decoders: DecoderSlots

    public init(configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger) {
        self.configuration = configuration
        demand = DeviceDemand(idleMilliseconds: configuration.deviceIdleMilliseconds)
        decoders = DecoderSlots(limit: configuration.limits.maxDecoders)
        self.logger = logger
        self.metrics = PlaybackMetrics(registry: metrics.registry)
        renderState = Mutex(RenderState(ducker: Ducker(depthDecibels: configuration.duckDecibels)))
    }

    /// The format streams are converted to: the card's once it is open, the requested one before.
    public var mixFormat: AudioFormat {
        if let negotiated = hardware.withLock({ $0 }) { return negotiated.format }
        let request = configuration.playbackRequest
        return AudioFormat(rate: request.preferredRate, channels: request.preferredChannels, sampleFormat: .f32le)
    }

    // MARK: - PlaybackSource (playback thread)

    public func render(into buffer: UnsafeMutableBufferPointer<Float>, frames: Int, format: AudioFormat, startFrame: UInt64) {
        let (streams, hasMusic, hasTimed) = registry.withLock { ($0.list, $0.hasMusic, $0.hasTimed) }
        let samples = frames * format.channels
        guard samples <= buffer.count, let period = buffer.baseAddress else {
            buffer.update(repeating: 0)
            return
        }
        period.update(repeating: 0, count: samples)
        let at = PlaybackPeriod(startFrame: startFrame, leaveTime: hasTimed ? leaveTime(ofDeviceFrame: startFrame) : nil)
        // Lent: mixing adds the locked scratch into the caller's buffer in one call.
        let lent = LentBuffer(UnsafeMutableBufferPointer(start: period, count: samples))
        let (silent, ducking) = renderState.withLock { state -> (Bool, Bool) in
            guard let output = lent.buffer.baseAddress else { return (true, false) }
            // Only on the first period after an open with a larger period: not the steady path.
            if state.scratch.capacity < samples { state.scratch = PlaybackScratch(capacity: samples) }
            if state.curve.capacity < frames { state.curve = PlaybackScratch(capacity: frames) }
            guard !streams.isEmpty else {
                // Nothing plays: the zeroed period is the output, so idle costs no mixing.
                state.gain = volume.targetGain
                _ = state.ducker.advance(voiceAudible: false, frames: frames, rate: format.rate, curve: state.curve.buffer.baseAddress!)
                return (true, state.ducker.active)
            }
            let scratch = state.scratch.buffer
            guard let source = scratch.baseAddress, let curve = state.curve.buffer.baseAddress else { return (true, false) }
            // Voices first: whether one is audible sets the music's gain for this same period. With
            // no music playing nothing is lowered, and the voices are not even looked at.
            var voiceAudible = false
            let mix = UnsafeMutableBufferPointer(start: output, count: samples)
            for stream in streams where stream.role == .voice {
                guard hasMusic, !voiceAudible else {
                    // Nothing to learn from the voice's samples: the stream adds itself into the mix.
                    _ = stream.render(.mix(mix, scratch: scratch), frames: frames, format: format, at: at)
                    continue
                }
                let taken = stream.render(into: scratch, frames: frames, format: format, at: at)
                guard taken > 0 else { continue }
                SampleMath.accumulate(source, into: output, count: taken * format.channels)
                voiceAudible = SampleMath.exceeds(source, count: taken * format.channels, limit: Ducker.audibleLevel)
            }
            let duckGain = state.ducker.advance(voiceAudible: voiceAudible, frames: frames, rate: format.rate, curve: curve)
            if hasMusic {
                for stream in streams where stream.role == .music {
                    let taken = stream.render(into: scratch, frames: frames, format: format, at: at)
                    if taken > 0 { Self.addMusic(source, into: output, frames: taken, channels: format.channels, gain: duckGain, curve: curve) }
                }
            }
            let target = volume.targetGain
            if state.gain != target || target != 1 {
                // Over one period: a volume change or mute never clicks.
                var ramp = GainRamp(from: state.gain, to: target, frames: frames)
                SampleMath.ramp(output, frames: frames, channels: format.channels, &ramp)
                state.gain = target
            }
            // Speech rarely comes near the knee: one vector pass finds that nothing needs limiting.
            if SampleMath.exceeds(output, count: samples, limit: Self.knee) {
                for index in 0..<samples { output[index] = Self.softLimit(output[index]) }
            }
            return (false, state.ducker.active)
        }
        if duckingActive.load(ordering: .relaxed) != ducking {
            // Only when it changes: at most twice per voice.
            duckingActive.store(ducking, ordering: .relaxed)
            metrics.ducking.set(to: ducking ? 1 : 0)
        }
        echoReference.rendered(
            silent ? nil : UnsafeBufferPointer(buffer), frames: frames, format: format, startFrame: startFrame)
    }

    /// When device frame `frame` leaves the card, for timed streams; nil before the device has
    /// reported a delay (timed streams wait for it). The one place a period is dated.
    func leaveTime(ofDeviceFrame frame: UInt64) -> Double? {
        deviceClock.withLock { $0.time(ofFrame: frame) }
    }

    public func playbackProgress(framesWritten: UInt64, clock: DeviceClock) {
        let streams = registry.withLock { $0.list }
        let rate = hardware.withLock { $0?.format.rate } ?? mixFormat.rate
        deviceClock.withLock { $0 = clock }
        echoReference.progress(clock)
        // Not dated (the device reopened or dropped its buffer): nothing is ahead of the speaker.
        let playing = clock.frame(at: MonotonicClock.nowNanoseconds()).map { min(max($0, 0), Double(framesWritten)) }
        let playedDevice = playing.map { UInt64($0) } ?? framesWritten
        for stream in streams { stream.progress(playedDevice: playedDevice, rate: rate) }
    }

    /// A queued stream in use, or any stream with audio left to play: a timed stream's producer
    /// (a network player) holds its stream between songs without holding the card.
    public var needsDevice: Bool {
        registry.withLock { registry in
            registry.entries.values.contains { ($0.users > 0 && $0.stream.policy == .queued) || !$0.stream.isIdle }
        }
    }

    public func playbackStatusChanged(_ status: DeviceStatus) {
        guard let negotiated = status.negotiated else { return }
        let previous = hardware.withLock { hardware in
            defer { hardware = negotiated }
            return hardware
        }
        if let previous, previous.format != negotiated.format {
            logger.warning(
                "playback format changed: queued audio is flushed",
                metadata: ["from": "\(previous.format)", "to": "\(negotiated.format)"])
        }
    }

    /// Adds a music stream's frames at the ducking gain: `gain` for the whole period, or `curve`
    /// (one gain per frame) while it ramps.
    @inline(__always)
    static func addMusic(
        _ source: UnsafePointer<Float>, into output: UnsafeMutablePointer<Float>, frames: Int, channels: Int, gain: Float?,
        curve: UnsafePointer<Float>
    ) {
        if let gain {
            if gain == 1 {
                SampleMath.accumulate(source, into: output, count: frames * channels)
            } else {
                SampleMath.accumulate(source, into: output, count: frames * channels, gain: gain)
            }
        } else {
            SampleMath.accumulate(source, into: output, frames: frames, channels: channels, curve: curve)
        }
    }

    /// Where the soft limiter starts bending the curve.
    static let knee: Float = 0.9

    /// Identity below the knee, a tanh curve above it: sums of loud streams saturate smoothly at 1
    /// instead of wrapping or clipping hard.
    @inline(__always)
    static func softLimit(_ sample: Float) -> Float {
        let knee = Self.knee
        let magnitude = abs(sample)
        guard magnitude > knee else { return sample }
        let headroom: Float = 1 - knee
        let limited = knee + headroom * Float(tanh(Double((magnitude - knee) / headroom)))
        return sample < 0 ? -limited : limited
    }

    // MARK: - Readers

    /// Active streams.
    public var streamCount: Int {
        registry.withLock { registry in
            registry.entries.values.filter { $0.users > 0 || !$0.stream.isIdle }.count
        }
    }

    /// Audio queued across streams, in milliseconds.
    public var queuedMilliseconds: Double {
        registry.withLock { $0.list }.reduce(0) { $0 + $1.queuedMilliseconds }
    }

    /// Stream underruns (a stream's queue or timed playout ran dry mid-audio).
    public var underruns: Int {
        registry.withLock { $0.list }.reduce(0) { $0 + $1.underruns } + retiredUnderruns.load(ordering: .relaxed)
    }

    let retiredUnderruns = Atomic<Int>(0)
}
