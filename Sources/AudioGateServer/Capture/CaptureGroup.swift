import AudioGateCore
import AudioGateDevices

/// The subscribers of one client format and the resampler they share.
///
/// Lives inside the hub's lock: the capture thread processes it, clients only join and leave.
final class CaptureGroup {
    /// The client format (rate, channels, sample format).
    let format: AudioFormat
    let quality: Resampler.Quality
    /// The processing its subscribers asked for; when enabled, `voice` runs it on its own thread.
    let processing: VoiceProcessing
    private let voice: VoiceChannel?
    /// Every subscriber of the group.
    private(set) var subscribers: [CaptureSubscriber] = []
    /// Those that cut their own chunks (all but lane members); the capture thread appends to each.
    private var copying: [CaptureSubscriber] = []
    /// Lane members by chunk length; the capture thread cuts each lane's chunks once.
    private var lanes: [CaptureLane] = []
    /// Those that asked for levels.
    private(set) var levelSubscribers: [CaptureSubscriber] = []
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
        subscribers.reserveCapacity(8)
    }

    /// Adds a subscriber: a lane member joins the lane of its chunk length.
    func add(_ subscriber: CaptureSubscriber) {
        subscribers.append(subscriber)
        if subscriber.parameters.levels { levelSubscribers.append(subscriber) }
        guard subscriber.sharesChunks, let writer = subscriber.writer else {
            copying.append(subscriber)
            return
        }
        let milliseconds = subscriber.parameters.chunkMilliseconds
        let lane: CaptureLane
        if let existing = lanes.first(where: { $0.chunkMilliseconds == milliseconds }) {
            lane = existing
        } else {
            lane = CaptureLane(chunkMilliseconds: milliseconds, chunkBytes: subscriber.chunkBytes)
            lanes.append(lane)
        }
        lane.add(subscriber, drain: writer.drain)
    }

    /// Removes a subscriber (no-op if it is not one).
    func remove(_ subscriber: CaptureSubscriber) {
        subscribers.removeAll { $0 === subscriber }
        levelSubscribers.removeAll { $0 === subscriber }
        copying.removeAll { $0 === subscriber }
        for lane in lanes { lane.remove(subscriber) }
        lanes.removeAll { $0.isEmpty }
    }

    /// Tells every subscriber the device was lost or came back: lane members after the chunks
    /// already posted to them.
    func broadcast(_ state: DeviceMessage.State) {
        for subscriber in copying { subscriber.deliver(state) }
        for lane in lanes { lane.post(.device(state), drains: nil) }
    }

    /// Stops the processing thread (the group lost its last subscriber).
    func close() {
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
        for lane in lanes { lane.reset() }
        resampler?.reset()
        inputFrames = 0
        outputFrames = 0
    }

    /// Converts one hardware period to this group's format and appends it to every subscriber.
    func process(
        _ samples: UnsafeBufferPointer<Float>, frames: Int, hardware: AudioFormat, timestamp: UInt64, ready: UInt64,
        scratch: CaptureScratch, drains: UnsafeMutablePointer<CaptureDrains>? = nil
    ) {
        guard !subscribers.isEmpty, frames > 0 else { return }
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
            voice.submit(output, start: start, ready: ready, subscribers: subscribers)
            return
        }

        let byteCount = produced * channels * format.sampleFormat.bytesPerSample
        _ = SampleConversion.encode(
            output, format: format.sampleFormat,
            into: UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: scratch.encoded[0..<byteCount])))
        let bytes = UnsafeBufferPointer(rebasing: scratch.encoded[0..<byteCount])
        let nanosecondsPerFrame = 1e9 / Double(format.rate)
        for lane in lanes {
            lane.feed(
                bytes, start: start, nanosecondsPerFrame: nanosecondsPerFrame, bytesPerFrame: format.bytesPerFrame,
                ready: ready, drains: drains)
        }
        for subscriber in copying {
            subscriber.append(bytes, start: start, nanosecondsPerFrame: nanosecondsPerFrame, ready: ready, drains: drains)
        }
    }
}
