import AudioGateCore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The capture device thread: reads at the hardware format, converts to float and hands the audio
/// to the sink, dated by the device's clock; the skeleton of `DeviceLoop` opens, recovers and reopens.
///
/// It wakes once per `CaptureSink.batchMilliseconds` of audio rather than once per period (ALSA's
/// `avail_min`): a client taking 20 ms chunks gets each as soon as it is whole either way, and the
/// thread and the event loops it feeds wake half as often at a 10 ms period.
public final class CaptureLoop: DeviceLoop {
    /// Status for readers.
    public let monitor: DeviceMonitor
    let opener: DeviceOpener
    let request: PCMRequest
    let sink: any CaptureSink
    /// Stops the device while nobody listens; nil keeps it running.
    let demand: DeviceDemand?
    let logger: Logger
    let control = DeviceLoopControl()
    /// A capture that delivers nothing for this long is treated as a dead device.
    static let stallMilliseconds = 2000

    public init(
        opener: DeviceOpener, request: PCMRequest = .capture, sink: any CaptureSink, demand: DeviceDemand? = nil,
        logger: Logger
    ) {
        self.opener = opener
        self.request = request
        self.sink = sink
        self.demand = demand
        self.logger = logger
        monitor = DeviceMonitor(name: opener.name, direction: .capture)
    }

    static let threadName = "ag-capture"
    static let direction = PCMDirection.capture
    static let clockTuning = DeviceClock.Tuning.capture

    struct TransferState {
        /// Frames read since the stream (re)started: the device frame of the next read's first.
        var framesRead: UInt64 = 0
        var silentMilliseconds = 0
        var wakeFrames = 0
        var idle = IdleCountdown()
    }

    func initialState() -> TransferState { TransferState() }

    func opened(_ stream: any PCMStream, buffers: DeviceBuffers, status: DeviceStatus, state: inout TransferState) {
        state.wakeFrames = stream.negotiated.periodFrames
        state.silentMilliseconds = 0
    }

    func resumed(after error: ALSAError, buffers: DeviceBuffers, state: inout TransferState) {}

    func transfer(
        _ stream: any PCMStream, buffers io: DeviceBuffers, clock: inout DeviceClock, state: inout TransferState
    ) throws(ALSAError) {
        let wanted = io.wakeFrames(batchMilliseconds: sink.batchMilliseconds)
        if wanted != state.wakeFrames {
            try stream.setWakeThreshold(frames: wanted)
            state.wakeFrames = wanted
        }
        guard
            try waitCountingStall(
                stream, waited: &state.silentMilliseconds, stallMilliseconds: Self.stallMilliseconds, what: "no audio")
        else { return }
        // Everything that is ready, in one read: a sound server may deliver more than asked for.
        let frames = try stream.read(into: io.raw.baseAddress!, frames: io.capacityFrames)
        guard frames > 0 else { return }
        state.silentMilliseconds = 0
        let now = MonotonicClock.nowNanoseconds()
        let pending = (try? stream.delay()) ?? 0
        if pending > max(4 * io.bufferFrames, io.format.rate / 4) {
            // Sound servers (the ALSA pulse plugin) keep buffering where a card would overrun;
            // treating a backlog of a quarter second as an overrun keeps listeners near live audio.
            throw ALSAError(
                code: .xrun, call: "snd_pcm_delay", errno: EPIPE,
                message: "capture backlog of \(pending) frames exceeds the buffer")
        }
        if !clock.isAnchored { state.framesRead = 0 }
        // The frame entering the card now: after what was read, what is still readable here,
        // counted exactly, plus at most a period of what the device reports upstream of it (a
        // card's FIFO is a few frames). A sound-server plugin (ALSA pulse) reports upstream latency
        // from libpulse's interpolated timing, which until its first timing update, about 1.2 s
        // into the stream, can be 50-120 ms off and then corrects at once: dated by it, continuous
        // audio would look like a 100 ms loss. (docs/architecture.md, "Device timing")
        let readable = (try? stream.available()) ?? 0
        let upstream = min(max(pending - readable, 0), io.periodFrames)
        let first = state.framesRead
        state.framesRead += UInt64(frames)
        clock.update(frame: state.framesRead + UInt64(readable + upstream), at: now, rate: io.format.rate)
        let count = frames * io.format.channels
        _ = SampleConversion.decode(
            UnsafeRawBufferPointer(start: io.raw.baseAddress, count: io.format.bytesPerFrame * frames),
            format: io.format.sampleFormat,
            into: UnsafeMutableBufferPointer(rebasing: io.samples[0..<count]))
        let timestamp = clock.time(ofFrame: first).map { UInt64(max(0, $0)) } ?? now
        sink.captured(
            UnsafeBufferPointer(rebasing: io.samples[0..<count]), frames: frames, format: io.format, timestamp: timestamp)
        monitor.update { $0.frames += UInt64(frames) }
        if let demand, state.idle.expired(inUse: sink.needsDevice, demand: demand, now: now) {
            try sleepWhileUnused(stream, demand: demand, inUse: { sink.needsDevice })
            state.idle.reset()
            clock.reset()
        }
    }

    func report(_ status: DeviceStatus) {
        sink.captureStatusChanged(status)
    }
}
