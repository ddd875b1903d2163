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

    struct Registry {
        var entries: [String: Entry] = [:]
        /// What the device thread iterates: replaced (never mutated in place) so a render holds a stable copy.
        var list: [PlaybackStream] = []
    }

    /// Device-thread state: scratch space and the current gain of the volume ramp.
    struct RenderState {
        var scratch = PlaybackScratch(capacity: 0)
        var gain: Float = 1
        var lastPlayedDevice: UInt64 = 0
    }

    let configuration: ServerConfiguration
    let logger: Logger
    let metrics: PlaybackMetrics
    /// Output volume and mute.
    public let volume = VolumeControl()
    /// What was written to the device, dated by when it plays: the echo cancellers' reference.
    public let echoReference = EchoReference()
    let registry = Mutex(Registry())
    let renderState = Mutex(RenderState())
    let hardware: Mutex<NegotiatedFormat?> = Mutex(nil)
    /// Stops the playback device while nothing plays; acquiring a stream wakes it.
    public let demand: DeviceDemand

    public init(configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger) {
        self.configuration = configuration
        demand = DeviceDemand(idleMilliseconds: configuration.deviceIdleMilliseconds)
        self.logger = logger
        self.metrics = PlaybackMetrics(registry: metrics.registry)
    }

    /// The format streams are converted to: the card's once it is open, the requested one before.
    public var mixFormat: AudioFormat {
        if let negotiated = hardware.withLock({ $0 }) { return negotiated.format }
        let request = configuration.playbackRequest
        return AudioFormat(rate: request.preferredRate, channels: request.preferredChannels, sampleFormat: .f32le)
    }

    // MARK: - PlaybackSource (playback thread)

    public func render(into buffer: UnsafeMutableBufferPointer<Float>, frames: Int, format: AudioFormat, startFrame: UInt64) {
        let streams = registry.withLock { $0.list }
        let samples = frames * format.channels
        guard samples <= buffer.count, let period = buffer.baseAddress else {
            buffer.update(repeating: 0)
            return
        }
        period.update(repeating: 0, count: samples)
        // Lent: mixing adds the locked scratch into the caller's buffer in one call.
        let lent = LentBuffer(UnsafeMutableBufferPointer(start: period, count: samples))
        let silent = renderState.withLock { state -> Bool in
            guard let output = lent.buffer.baseAddress else { return true }
            if state.scratch.capacity < samples {
                // Only on the first period after an open with a larger period: not the steady path.
                state.scratch = PlaybackScratch(capacity: samples)
            }
            guard !streams.isEmpty else {
                // Nothing plays: the zeroed period is the output, so idle costs no mixing.
                state.gain = volume.targetGain
                return true
            }
            let scratch = state.scratch.buffer
            for stream in streams {
                let taken = stream.pull(into: scratch, frames: frames, format: format, startFrame: startFrame)
                if let source = scratch.baseAddress {
                    SampleMath.accumulate(source, into: output, count: taken * format.channels)
                }
            }
            let target = volume.targetGain
            var gain = state.gain
            if gain != target {
                // A linear ramp over one period: a volume change or mute never clicks.
                let step = (target - gain) / Float(frames)
                for frame in 0..<frames {
                    gain += step
                    let base = frame * format.channels
                    for channel in 0..<format.channels { output[base + channel] *= gain }
                }
                gain = target
            } else if gain != 1 {
                for index in 0..<samples { output[index] *= gain }
            }
            state.gain = gain
            // Speech rarely comes near the knee: one vector pass finds that nothing needs limiting.
            if SampleMath.exceeds(output, count: samples, limit: Self.knee) {
                for index in 0..<samples { output[index] = Self.softLimit(output[index]) }
            }
            return false
        }
        echoReference.rendered(
            silent ? nil : UnsafeBufferPointer(buffer), frames: frames, format: format, startFrame: startFrame)
    }

    public func playbackProgress(framesWritten: UInt64, delayFrames: Int) {
        echoReference.progress(framesWritten: framesWritten, delayFrames: delayFrames)
        let streams = registry.withLock { $0.list }
        let delay = UInt64(max(delayFrames, 0))
        let playedDevice = framesWritten > delay ? framesWritten - delay : 0
        let rate = hardware.withLock { $0?.format.rate } ?? mixFormat.rate
        for stream in streams { stream.progress(playedDevice: playedDevice, rate: rate) }
    }

    /// A stream in use or with audio left to play.
    public var needsDevice: Bool {
        registry.withLock { $0.entries.values.contains { $0.users > 0 || !$0.stream.isIdle } }
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
        registry.withLock { $0.entries.values.filter { $0.users > 0 || !$0.stream.isIdle }.count }
    }

    /// Audio queued across streams, in milliseconds.
    public var queuedMilliseconds: Double {
        registry.withLock { $0.list }.reduce(0) { $0 + $1.queuedMilliseconds }
    }

    /// Stream underruns (a stream's queue ran dry mid-audio).
    public var underruns: Int {
        registry.withLock { $0.list }.reduce(0) { $0 + $1.underruns } + retiredUnderruns.load(ordering: .relaxed)
    }

    let retiredUnderruns = Atomic<Int>(0)
}
