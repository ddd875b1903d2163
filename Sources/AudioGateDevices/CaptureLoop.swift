import AudioGateCore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The capture device thread: reads periods at the hardware format, converts them to float and
/// hands them to the sink, recovering from xruns, suspends and lost devices on its own.
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

    func loop() {
        var backoff = Backoff()
        var stream: (any PCMStream)?
        var buffers: DeviceBuffers?
        var opened = 0
        var silentMilliseconds = 0
        var clock = CaptureClock()
        var idle = IdleCountdown()
        var wakeFrames = 0

        while !control.stopRequested {
            guard let current = stream, let io = buffers else {
                do {
                    let fresh = try opener.open(.capture, request: request)
                    try fresh.start()
                    stream = fresh
                    buffers = DeviceBuffers(fresh.negotiated)
                    wakeFrames = fresh.negotiated.periodFrames
                    backoff.reset()
                    silentMilliseconds = 0
                    let status = monitor.opened(fresh.negotiated, isReopen: opened > 0)
                    opened += 1
                    logger.info("capture device open", metadata: ["device": "\(opener.name)", "format": "\(fresh.negotiated)"])
                    sink.captureStatusChanged(status)
                } catch {
                    fail(error, backoff: &backoff)
                }
                continue
            }

            do throws(ALSAError) {
                let wanted = io.wakeFrames(batchMilliseconds: sink.batchMilliseconds)
                if wanted != wakeFrames {
                    try current.setWakeThreshold(frames: wanted)
                    wakeFrames = wanted
                }
                if try !current.wait(timeoutMilliseconds: 100) {
                    silentMilliseconds += 100
                    if silentMilliseconds >= Self.stallMilliseconds {
                        throw ALSAError(code: .failed, call: "snd_pcm_wait", message: "no audio for 2 s: device stalled")
                    }
                    continue
                }
                // Everything that is ready, in one read: a sound server may deliver more than asked for.
                let frames = try current.read(into: io.raw.baseAddress!, frames: io.capacityFrames)
                guard frames > 0 else { continue }
                silentMilliseconds = 0
                let now = MonotonicClock.nowNanoseconds()
                let pending = (try? current.delay()) ?? 0
                if pending > max(4 * io.bufferFrames, io.format.rate / 4) {
                    // Sound servers (the ALSA pulse plugin) keep buffering where a card would overrun;
                    // treating a backlog of a quarter second as an overrun keeps listeners near live audio.
                    throw ALSAError(
                        code: .xrun, call: "snd_pcm_delay", errno: EPIPE,
                        message: "capture backlog of \(pending) frames exceeds the buffer")
                }
                // The age of the read: what is still readable here, counted exactly, plus at most a
                // period of what the device reports upstream of it (a card's FIFO is a few frames).
                // A sound-server plugin (ALSA pulse) reports upstream latency from libpulse's
                // interpolated timing, which until its first timing update, about 1.2 s into the
                // stream, can be 50-120 ms off and then corrects at once: dated by it, continuous
                // audio would look like a 100 ms loss. (docs/architecture.md, "Capture timestamps")
                let readable = (try? current.available()) ?? 0
                let upstream = min(max(pending - readable, 0), io.periodFrames)
                let age = UInt64(readable + upstream + frames) * 1_000_000_000 / UInt64(io.format.rate)
                let count = frames * io.format.channels
                _ = SampleConversion.decode(
                    UnsafeRawBufferPointer(start: io.raw.baseAddress, count: io.format.bytesPerFrame * frames),
                    format: io.format.sampleFormat,
                    into: UnsafeMutableBufferPointer(rebasing: io.samples[0..<count]))
                sink.captured(
                    UnsafeBufferPointer(rebasing: io.samples[0..<count]), frames: frames, format: io.format,
                    timestamp: clock.timestamp(measured: now > age ? now - age : 0, frames: frames, rate: io.format.rate))
                monitor.update { $0.frames += UInt64(frames) }
                if let demand, idle.expired(inUse: sink.needsDevice, demand: demand, now: now) {
                    try sleepWhileUnused(current, demand: demand, inUse: { sink.needsDevice })
                    idle.reset()
                    clock.reset()
                }
            } catch {
                clock.reset()
                switch Recovery.recover(from: error, stream: current, direction: .capture, monitor: monitor) {
                case .resumed:
                    if error.code == .xrun || error.code == .suspended {
                        logger.debug("capture recovered", metadata: ["error": "\(error)"])
                        sink.captureStatusChanged(monitor.snapshot)
                    }
                case .reopen:
                    logger.warning("capture device lost", metadata: ["error": "\(error)"])
                    stream = nil
                    buffers = nil
                    fail(error, backoff: &backoff)
                }
            }
        }
    }

    func report(_ status: DeviceStatus) {
        sink.captureStatusChanged(status)
    }
}
