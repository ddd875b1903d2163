import AudioGateCore
import AudioGateDevices

/// The subscribers of one client format and the resampler they share.
///
/// Built on a client's task (with its resampler and processing channel), then lives inside the
/// hub's lock: the capture thread processes it; a join or leave only swaps in new `members`.
///
/// Unchecked Sendable: the client that builds a group prepares it before anyone else sees it; from
/// then on its processing state (resampler, frame counts) is touched only by the capture thread
/// under the hub's core lock, and `members` is replaced only with both the hub's registry and core
/// locks held, so a reader holding either sees a stable value.
final class CaptureGroup: @unchecked Sendable {
    /// The client format (rate, channels, sample format).
    let format: AudioFormat
    let quality: Resampler.Quality
    /// The processing its subscribers asked for; when enabled, `voice` runs it on its own thread.
    let processing: VoiceProcessing
    /// Runs the processing on its own thread; started once the group is in the hub's list.
    let voice: VoiceChannel?
    /// Who the audio goes to; replaced whole, under the hub's lock (`swapMembers`).
    private(set) var members = Members()
    private var resampler: Resampler?
    private var hardware: AudioFormat?
    /// Hardware frames fed and client frames produced since the resampler was (re)built; their
    /// difference is the audio the resampler still holds, which dates its output exactly.
    private var inputFrames: UInt64 = 0
    private var outputFrames: UInt64 = 0

    init(
        format: AudioFormat, quality: Resampler.Quality, processing: VoiceProcessing = VoiceProcessing(),
        echo: EchoReference = EchoReference()
    ) throws(VoiceProcessingError) {
        self.format = format
        self.quality = quality
        self.processing = processing
        voice =
            processing.isEnabled
            ? try VoiceChannel(format: format, processing: processing, echo: echo, quality: quality) : nil
    }

    /// Every subscriber of the group.
    var subscribers: [CaptureSubscriber] { members.all }

    /// Those that asked for levels.
    var levelSubscribers: [CaptureSubscriber] { members.levels }

    /// Exchanges the members for `other` (the next ones, built off the capture thread); `other`
    /// comes back holding the previous ones, to be released outside the lock.
    func swapMembers(_ other: inout Members) {
        swap(&members, &other)
    }

    /// Tells every subscriber the device was lost or came back: lane members after the chunks
    /// already posted to them.
    func broadcast(_ state: DeviceMessage.State) {
        for subscriber in members.copying { subscriber.deliver(state) }
        for route in members.lanes { route.lane.post(.device(state), to: route.loops, drains: nil) }
    }

    /// Starts the processing thread, once the group is in the hub's list.
    func start() {
        voice?.start()
    }

    /// Stops the processing thread (the group lost its last subscriber, or was never used);
    /// returns the thread to join, if one ran.
    func close() -> WorkerThread? {
        voice?.close()
    }

    /// Builds the resampler for a hardware format (no-op when it is already built for it).
    func prepare(for hardware: AudioFormat) {
        guard self.hardware?.rate != hardware.rate || self.hardware?.channels != hardware.channels else { return }
        self.hardware = hardware
        // Rates are validated against ClientFormats and hardware rates are sane, so this cannot fail
        // in practice; on failure the group stays silent rather than crashing the capture thread.
        resampler = hardware.rate == format.rate
            ? nil
            : try? Resampler(inputRate: hardware.rate, outputRate: format.rate, channels: format.channels, quality: quality)
        inputFrames = 0
        outputFrames = 0
    }

    /// Forgets filter history after a discontinuity (the device came back).
    func reset() {
        voice?.reset()
        for route in members.lanes { route.lane.reset() }
        resampler?.reset()
        inputFrames = 0
        outputFrames = 0
    }

    /// Converts one hardware period to this group's format and appends it to every subscriber.
    func process(
        _ samples: UnsafeBufferPointer<Float>, frames: Int, hardware: AudioFormat, timestamp: UInt64, ready: UInt64,
        scratch: CaptureScratch, drains: UnsafeMutablePointer<CaptureDrains>? = nil
    ) {
        guard !members.isEmpty, frames > 0 else { return }
        prepare(for: hardware)
        let channels = format.channels
        let outputCapacity = resampler?.maximumOutputFrames(forInputFrames: frames) ?? frames
        scratch.reserve(
            mixed: frames * channels, resampled: outputCapacity * channels,
            encoded: outputCapacity * channels * format.sampleFormat.bytesPerSample)

        var input = samples
        if hardware.channels != channels {
            let mixed = ChannelMixer.remix(samples, from: hardware.channels, to: channels, into: scratch.mixed)
            input = UnsafeBufferPointer(rebasing: scratch.mixed[0..<(mixed * channels)])
        }
        var output = input
        var produced = frames
        if let resampler {
            produced = resampler.process(input, into: scratch.resampled)
            output = UnsafeBufferPointer(rebasing: scratch.resampled[0..<(produced * channels)])
        }

        // Client frame `outputFrames` is hardware frame `outputFrames / ratio` of this group's stream,
        // and this period starts at hardware frame `inputFrames`, captured at `timestamp`.
        let ratio = Double(format.rate) / Double(hardware.rate)
        let offsetFrames = Double(outputFrames) / ratio - Double(inputFrames)
        let start = Double(timestamp) + offsetFrames * 1e9 / Double(hardware.rate)
        inputFrames &+= UInt64(frames)
        outputFrames &+= UInt64(produced)
        guard produced > 0 else { return }
        if let voice {
            // Processing runs on the channel's thread, which encodes and delivers in its place.
            voice.submit(output, start: start, ready: ready, subscribers: members.all)
            return
        }

        let byteCount = produced * channels * format.sampleFormat.bytesPerSample
        _ = SampleConversion.encode(
            output, format: format.sampleFormat,
            into: UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: scratch.encoded[0..<byteCount])))
        let bytes = UnsafeBufferPointer(rebasing: scratch.encoded[0..<byteCount])
        let nanosecondsPerFrame = 1e9 / Double(format.rate)
        for route in members.lanes {
            route.lane.feed(
                bytes, start: start, nanosecondsPerFrame: nanosecondsPerFrame, bytesPerFrame: format.bytesPerFrame,
                ready: ready, to: route.loops, drains: drains)
        }
        for subscriber in members.copying {
            subscriber.append(bytes, start: start, nanosecondsPerFrame: nanosecondsPerFrame, ready: ready, drains: drains)
        }
    }
}
