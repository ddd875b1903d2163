import AudioGateCore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The playback device thread: asks the source for one period at a time (the mixer writes silence
/// when nothing is queued, so the card never underruns), converts it and writes it, recovering
/// from underruns, suspends and lost devices on its own.
public final class PlaybackLoop: DeviceLoop {
    /// Status for readers.
    public let monitor: DeviceMonitor
    let opener: DeviceOpener
    let request: PCMRequest
    let source: any PlaybackSource
    /// Stops the device while nothing plays; nil keeps it running.
    let demand: DeviceDemand?
    let logger: Logger
    let control = DeviceLoopControl()
    /// A device that accepts nothing for this long is treated as dead.
    static let stallMilliseconds = 2000

    public init(
        opener: DeviceOpener, request: PCMRequest = .playback, source: any PlaybackSource,
        demand: DeviceDemand? = nil, logger: Logger
    ) {
        self.opener = opener
        self.request = request
        self.source = source
        self.demand = demand
        self.logger = logger
        monitor = DeviceMonitor(name: opener.name, direction: .playback)
    }

    static let threadName = "ag-playback"
    static let direction = PCMDirection.playback

    func loop() {
        var backoff = Backoff()
        var stream: (any PCMStream)?
        var buffers: DeviceBuffers?
        var opened = 0
        var framesWritten: UInt64 = 0
        var pendingOffset = 0
        var pendingFrames = 0
        var blockedMilliseconds = 0
        var idle = IdleCountdown()
        // A buffer found empty counts as a hole only once a whole buffer has been written since the
        // device (re)started; before that it is empty because it is new.
        var filledAt: UInt64 = 0

        while !control.stopRequested {
            guard let current = stream, let io = buffers else {
                do {
                    let fresh = try opener.open(.playback, request: request)
                    stream = fresh
                    buffers = DeviceBuffers(fresh.negotiated)
                    pendingFrames = 0
                    pendingOffset = 0
                    blockedMilliseconds = 0
                    filledAt = framesWritten + UInt64(fresh.negotiated.bufferFrames)
                    backoff.reset()
                    let status = monitor.opened(fresh.negotiated, isReopen: opened > 0)
                    opened += 1
                    logger.info("playback device open", metadata: ["device": "\(opener.name)", "format": "\(fresh.negotiated)"])
                    // Whatever sat in the old device's buffer is gone: nothing is ahead of the speaker.
                    source.playbackProgress(framesWritten: framesWritten, delayFrames: 0)
                    source.playbackStatusChanged(status)
                } catch {
                    fail(error, backoff: &backoff)
                }
                continue
            }

            do throws(ALSAError) {
                if pendingFrames == 0 {
                    if let demand,
                        idle.expired(inUse: source.needsDevice, demand: demand, now: MonotonicClock.nowNanoseconds())
                    {
                        // The dropped buffer holds only silence: nothing will be ahead of the speaker.
                        source.playbackProgress(framesWritten: framesWritten, delayFrames: 0)
                        try sleepWhileUnused(current, demand: demand, inUse: { source.needsDevice })
                        idle.reset()
                        blockedMilliseconds = 0
                        filledAt = framesWritten + UInt64(io.bufferFrames)
                        continue
                    }
                    let available = try current.available()
                    // The pulse plugin reports an underrun only if its notice arrives before the next
                    // write, so a buffer found played out is counted here as well.
                    if available >= io.bufferFrames - 1, framesWritten >= filledAt {
                        monitor.update { $0.ranEmpty += 1 }
                        filledAt = framesWritten + UInt64(io.bufferFrames)
                    }
                    if available < io.periodFrames {
                        if try !current.wait(timeoutMilliseconds: 100) {
                            blockedMilliseconds += 100
                            if blockedMilliseconds >= Self.stallMilliseconds {
                                throw ALSAError(
                                    code: .failed, call: "snd_pcm_wait", message: "no room for 2 s: device stalled")
                            }
                        }
                        continue
                    }
                    let count = io.periodFrames * io.format.channels
                    source.render(
                        into: UnsafeMutableBufferPointer(rebasing: io.samples[0..<count]), frames: io.periodFrames,
                        format: io.format, startFrame: framesWritten)
                    _ = SampleConversion.encode(
                        UnsafeBufferPointer(rebasing: io.samples[0..<count]), format: io.format.sampleFormat,
                        into: io.raw)
                    pendingFrames = io.periodFrames
                    pendingOffset = 0
                }
                let written = try current.write(
                    from: io.raw.baseAddress! + pendingOffset * io.format.bytesPerFrame, frames: pendingFrames)
                if written == 0 {
                    _ = try current.wait(timeoutMilliseconds: 10)
                    continue
                }
                blockedMilliseconds = 0
                pendingOffset += written
                pendingFrames -= written
                framesWritten += UInt64(written)
                let delay = (try? current.delay()) ?? 0
                source.playbackProgress(framesWritten: framesWritten, delayFrames: delay)
                monitor.update { $0.frames = framesWritten }
            } catch {
                switch Recovery.recover(from: error, stream: current, direction: .playback, monitor: monitor) {
                case .resumed:
                    filledAt = framesWritten + UInt64(io.bufferFrames)
                    if error.code == .xrun || error.code == .suspended {
                        logger.debug("playback recovered", metadata: ["error": "\(error)"])
                        source.playbackStatusChanged(monitor.snapshot)
                    }
                case .reopen:
                    logger.warning("playback device lost", metadata: ["error": "\(error)"])
                    stream = nil
                    buffers = nil
                    fail(error, backoff: &backoff)
                }
            }
        }
    }

    func report(_ status: DeviceStatus) {
        source.playbackStatusChanged(status)
    }
}
