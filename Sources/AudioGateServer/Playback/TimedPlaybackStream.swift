import AudioGateCore
import AudioGateDevices
import Synchronization

extension PlaybackMixer {
    /// A stream whose audio carries the time it must leave the loudspeaker.
    ///
    /// Throws 429 when `maxPlaybackStreams` streams are in use and 400 when a stream called
    /// `name` exists (a timed stream's name is its own until `close()`).
    public func acquireTimed(_ name: String, role: PlaybackRole, format: AudioFormat) throws(APIError) -> TimedPlaybackStream {
        guard TimedPlaybackStream.accepts(format) else {
            throw APIError(.badParameter, "a timed stream takes 1-8 channels at 8000-192000 Hz, not \(format)")
        }
        let stream = TimedPlaybackStream(
            name: name, role: role, format: format, mixFormat: mixFormatProvider,
            limitSeconds: configuration.limits.playbackQueueSeconds, quality: configuration.resamplerQuality,
            mixer: self)
        try addTimed(stream)
        return stream
    }
}

/// A playback stream whose chunks carry the monotonic time their first frame must leave the card.
///
/// Producers (a Snapcast or Sendspin client) enqueue from any thread without waiting; the mixer
/// plays each frame at its time through `TimedPlayout`. Audio is converted to the mix format on
/// the producer's side, so the device thread only copies.
public final class TimedPlaybackStream: Sendable {
    /// The stream's name (unique among playback streams).
    public let name: String
    /// Whether this stream is lowered while a voice plays.
    public let role: PlaybackRole
    let quality: Resampler.Quality
    private let mixFormat: @Sendable () -> AudioFormat
    private weak let mixer: PlaybackMixer?
    private let producer: Mutex<Producer>
    /// Shared with the device thread.
    let state: Mutex<DeviceState>
    private let closed = Atomic<Bool>(false)

    struct Producer {
        var format: AudioFormat
        var converter: PlaybackConverter
        /// Client frames converted since the last reset of the playout.
        var inputFrames: UInt64 = 0
        /// The playout generation those frames belong to.
        var generation = 0
        var mix: AudioFormat?
        var decoded: [UInt8] = []
    }

    struct DeviceState {
        var playout: TimedPlayout
        /// Linear gain and mute (Snapcast's server volume), and the gain the last period ended at.
        var targetGain: Float = 1
        var gain: Float = 1
    }

    static func accepts(_ format: AudioFormat) -> Bool {
        PlaybackParameters.rates.contains(format.rate) && (1...8).contains(format.channels)
    }

    init(
        name: String, role: PlaybackRole, format: AudioFormat, mixFormat: @escaping @Sendable () -> AudioFormat,
        limitSeconds: Int, quality: Resampler.Quality, mixer: PlaybackMixer
    ) {
        self.name = name
        self.role = role
        self.quality = quality
        self.mixFormat = mixFormat
        self.mixer = mixer
        var client = format
        client.sampleFormat = .s16le
        producer = Mutex(Producer(format: client, converter: PlaybackConverter(quality: quality)))
        state = Mutex(DeviceState(playout: TimedPlayout(format: mixFormat(), limitSeconds: limitSeconds)))
    }

    /// The format `enqueue` takes (interleaved s16).
    public var format: AudioFormat { producer.withLock { $0.format } }

    /// Queues interleaved s16 samples whose first frame must leave the loudspeaker at
    /// `presentationNanoseconds` (CLOCK_MONOTONIC). Never blocks; false when over its limit (the
    /// chunk is dropped). A chunk that ended before now is counted late and dropped (true).
    public func enqueue(_ samples: UnsafeBufferPointer<Int16>, presentationNanoseconds: UInt64) -> Bool {
        guard !closed.load(ordering: .relaxed) else { return false }
        let mix = mixFormat()
        // The caller's samples, read only inside the lock on the caller's thread.
        let handoff = LentBuffer(samples)
        let outcome = producer.withLock { producer -> Admission in
            let samples = handoff.readOnly
            let format = producer.format
            let frameCount = samples.count / format.channels
            guard frameCount > 0, let base = samples.baseAddress else { return .queued(wasEmpty: false) }
            // Saturating: a time near the end of UInt64 is far future, not a trap.
            let (sum, overflow) = presentationNanoseconds.addingReportingOverflow(
                UInt64(frameCount) * 1_000_000_000 / UInt64(format.rate))
            let end = overflow ? UInt64.max : sum
            let producerGeneration = producer.generation
            let inputFrames = producer.inputFrames
            let producerMix = producer.mix
            // The producer's counters are read before and updated after: the device lock only
            // sees values.
            let (admission, generation, restart) = state.withLock { state -> (Admission, Int, Bool) in
                if !state.playout.matches(mix) {
                    // The card reopened in another format: what was converted for the old one is gone.
                    state.playout = TimedPlayout(format: mix, limitSeconds: state.playout.limitFrames / max(state.playout.rate, 1))
                }
                let restart = producerGeneration != state.playout.generation || producerMix != mix
                let generation = state.playout.generation
                if end < MonotonicClock.nowNanoseconds() {
                    state.playout.statistics.lateChunks += 1
                    state.playout.statistics.lateFrames += frameCount
                    return (.late, generation, restart)
                }
                guard state.playout.hasRoom else { return (.full, generation, restart) }
                let position = Double(restart ? 0 : inputFrames) * Double(mix.rate) / Double(format.rate)
                state.playout.addRecord(position: position, time: Double(presentationNanoseconds))
                return (.queued(wasEmpty: state.playout.isEmpty), generation, restart)
            }
            if restart {
                producer.generation = generation
                producer.converter.reset()
                producer.inputFrames = 0
                producer.mix = mix
            }
            guard case .queued = admission else { return admission }
            producer.inputFrames += UInt64(frameCount)
            let raw = UnsafeRawBufferPointer(start: base, count: frameCount * format.channels * MemoryLayout<Int16>.size)
            producer.converter.convert(raw, format: format, mix: mix) { converted in
                // The converter's buffer, read only inside the lock on this thread.
                let lent = LentBuffer(converted)
                state.withLock { state in
                    // A reset while converting: this audio belonged to what was dropped.
                    guard state.playout.generation == generation else { return }
                    state.playout.write(lent.readOnly)
                }
            }
            return admission
        }
        switch outcome {
        case .queued(let wasEmpty):
            if wasEmpty { mixer?.demand.wake() }
            return true
        case .late: return true
        case .full: return false
        }
    }

    private enum Admission {
        case queued(wasEmpty: Bool)
        case late
        case full
    }

    /// Linear gain and mute applied to this stream (Snapcast's server volume).
    public func setVolume(_ gain: Float, muted: Bool) {
        let target = muted || !gain.isFinite ? 0 : min(max(gain, 0), 4)
        state.withLock { $0.targetGain = target }
    }

    /// Drops everything queued (server restart, codec change).
    public func reset() {
        producer.withLock { producer in
            state.withLock { $0.playout.reset() }
            producer.converter.reset()
            producer.inputFrames = 0
        }
    }

    /// Drops everything queued and takes `format` from now on (a codec header with another rate).
    public func reformat(_ format: AudioFormat) throws(APIError) {
        guard Self.accepts(format) else {
            throw APIError(.badParameter, "a timed stream takes 1-8 channels at 8000-192000 Hz, not \(format)")
        }
        producer.withLock { producer in
            state.withLock { $0.playout.reset() }
            producer.format = format
            producer.format.sampleFormat = .s16le
            producer.converter.reset()
            producer.inputFrames = 0
        }
    }

    /// What the stream did since it was created.
    public var statistics: TimedPlaybackStatistics {
        state.withLock { state in
            var statistics = state.playout.statistics
            statistics.bufferedMilliseconds = Double(state.playout.frames) * 1000 / Double(max(state.playout.rate, 1))
            return statistics
        }
    }

    /// Stops the stream: what is queued is dropped and the name is free again.
    public func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        state.withLock { $0.playout.reset() }
        mixer?.removeTimed(self)
    }

    var isClosed: Bool { closed.load(ordering: .relaxed) }

    /// Whether nothing is queued or playing.
    var isIdle: Bool { state.withLock { $0.playout.isEmpty && !$0.playout.playing } }

    /// Playback thread: fills `frames` frames of `destination` for a period whose first frame leaves
    /// the card at `startTime`; returns the frames filled (0 or `frames`).
    func render(into destination: UnsafeMutableBufferPointer<Float>, frames: Int, format: AudioFormat, startTime: Double) -> Int {
        let handoff = LentBuffer(destination)
        return state.withLock { state -> Int in
            guard state.playout.matches(format) else {
                if !state.playout.isEmpty { state.playout.reset() }
                return 0
            }
            let filled = state.playout.render(into: handoff.buffer, frames: frames, startTime: startTime)
            guard filled > 0, let output = handoff.buffer.baseAddress else {
                state.gain = state.targetGain
                return filled
            }
            let channels = format.channels
            let target = state.targetGain
            var gain = state.gain
            if gain != target {
                let step = (target - gain) / Float(frames)
                for frame in 0..<frames {
                    gain += step
                    for channel in 0..<channels { output[frame * channels + channel] *= gain }
                }
                state.gain = target
            } else if gain != 1 {
                for index in 0..<(frames * channels) { output[index] *= gain }
            }
            return filled
        }
    }
}
