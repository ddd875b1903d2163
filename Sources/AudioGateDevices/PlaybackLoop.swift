import AudioGateCore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The playback device thread: asks the source for one period at a time (the mixer writes silence
/// when nothing is queued, so the card never underruns), converts it and writes it, and dates the
/// device's frames after each write; the skeleton of `DeviceLoop` opens, recovers and reopens.
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
    static let clockTuning = DeviceClock.Tuning.playback

    struct TransferState {
        /// Frames written since the loop started, across reopens: the source's device frame count.
        var framesWritten: UInt64 = 0
        var pendingOffset = 0
        var pendingFrames = 0
        var blockedMilliseconds = 0
        var idle = IdleCountdown()
        /// A buffer found empty counts as a hole only once a whole buffer has been written since the
        /// device (re)started; before that it is empty because it is new.
        var filledAt: UInt64 = 0
        /// A sound server plugin's dating, by its pointer.
        var pointer = PointerDating()
    }

    func initialState() -> TransferState { TransferState() }

    func opened(_ stream: any PCMStream, buffers: DeviceBuffers, status: DeviceStatus, state: inout TransferState) {
        state.pendingFrames = 0
        state.pendingOffset = 0
        state.blockedMilliseconds = 0
        state.filledAt = state.framesWritten + UInt64(buffers.bufferFrames)
        state.pointer.reset()
        // Whatever sat in the old device's buffer is gone: nothing is ahead of the speaker.
        source.playbackProgress(framesWritten: state.framesWritten, clock: DeviceClock(tuning: Self.clockTuning))
    }

    func resumed(after error: ALSAError, buffers: DeviceBuffers, state: inout TransferState) {
        state.filledAt = state.framesWritten + UInt64(buffers.bufferFrames)
        state.pointer.reset()
    }

    func transfer(
        _ stream: any PCMStream, buffers io: DeviceBuffers, clock: inout DeviceClock, state: inout TransferState
    ) throws(ALSAError) {
        if state.pendingFrames == 0 {
            if let demand,
                state.idle.expired(inUse: source.needsDevice, demand: demand, now: MonotonicClock.nowNanoseconds())
            {
                // The dropped buffer holds only silence: nothing will be ahead of the speaker.
                clock.reset()
                state.pointer.reset()
                source.playbackProgress(framesWritten: state.framesWritten, clock: clock)
                try sleepWhileUnused(stream, demand: demand, inUse: { source.needsDevice })
                state.idle.reset()
                state.blockedMilliseconds = 0
                state.filledAt = state.framesWritten + UInt64(io.bufferFrames)
                return
            }
            let available = try stream.available()
            if stream.datesByPointer { datePointer(stream, available: available, buffers: io, clock: &clock, state: &state) }
            // The pulse plugin reports an underrun only if its notice arrives before the next
            // write, so a buffer found played out is counted here as well.
            if available >= io.bufferFrames - 1, state.framesWritten >= state.filledAt {
                monitor.update { $0.ranEmpty += 1 }
                state.filledAt = state.framesWritten + UInt64(io.bufferFrames)
            }
            if available < io.periodFrames {
                _ = try waitCountingStall(
                    stream, waited: &state.blockedMilliseconds, stallMilliseconds: Self.stallMilliseconds, what: "no room")
                return
            }
            let count = io.periodFrames * io.format.channels
            source.render(
                into: UnsafeMutableBufferPointer(rebasing: io.samples[0..<count]), frames: io.periodFrames,
                format: io.format, startFrame: state.framesWritten)
            _ = SampleConversion.encode(
                UnsafeBufferPointer(rebasing: io.samples[0..<count]), format: io.format.sampleFormat, into: io.raw)
            state.pendingFrames = io.periodFrames
            state.pendingOffset = 0
        }
        let written = try stream.write(
            from: io.raw.baseAddress! + state.pendingOffset * io.format.bytesPerFrame, frames: state.pendingFrames)
        if written == 0 {
            _ = try stream.wait(timeoutMilliseconds: 10)
            return
        }
        state.blockedMilliseconds = 0
        state.pendingOffset += written
        state.pendingFrames -= written
        state.framesWritten += UInt64(written)
        if !stream.datesByPointer {
            dateByDelay(stream, rate: io.format.rate, clock: &clock, framesWritten: state.framesWritten)
        }
        source.playbackProgress(framesWritten: state.framesWritten, clock: clock)
        monitor.update { $0.frames = state.framesWritten }
    }

    /// Dates the device by its delay after a write: the card's own count of what is still ahead
    /// of the speaker.
    private func dateByDelay(_ stream: any PCMStream, rate: Int, clock: inout DeviceClock, framesWritten: UInt64) {
        let delay = (try? stream.delay()) ?? 0
        // A zero delay is reported while the buffer is not running: it dates nothing.
        if delay > 0, UInt64(delay) <= framesWritten {
            let anchors = clock.anchors
            let now = MonotonicClock.nowNanoseconds()
            let error = clock.update(frame: framesWritten - UInt64(delay), at: now, rate: rate)
            // Each report against the dated line: the raw material for tuning the loop to a device.
            logger.trace(
                "playback clock report",
                metadata: ["frame": "\(framesWritten - UInt64(delay))", "delay": "\(delay)", "now": "\(now)", "error_us": "\(Int(error / 1000))"])
            if clock.anchors != anchors {
                logger.debug(
                    "playback clock anchored",
                    metadata: ["frame": "\(framesWritten - UInt64(delay))", "now": "\(now)", "anchors": "\(clock.anchors)"])
            }
        }
    }

    /// Dates a sound server plugin's device by its pointer (`PointerDating`), read as the loop wakes.
    private func datePointer(
        _ stream: any PCMStream, available: Int, buffers io: DeviceBuffers, clock: inout DeviceClock,
        state: inout TransferState
    ) {
        let now = MonotonicClock.nowNanoseconds()
        let taken = Int64(state.framesWritten) + Int64(available) - Int64(io.bufferFrames)
        // Before the buffer runs the pointer has not moved.
        guard taken >= 0 else { return }
        let written = state.framesWritten
        // Until libpulse's first timing update the delay is zero, which says nothing.
        let delayed = { () -> UInt64? in
            let delay = (try? stream.delay()) ?? 0
            return delay > 0 && UInt64(delay) <= written ? written - UInt64(delay) : nil
        }
        let latency = state.pointer.latency
        guard
            let report = state.pointer.observe(
                pointer: UInt64(taken), delayed: delayed, at: now, period: io.periodFrames, clock: clock,
                rate: io.format.rate)
        else { return }
        // The median moves by a millisecond at once only when it starts over (the first readings
        // dropped, or the server's latency moved); the line, and every timed stream with it, moves
        // only as far as it was off (`PointerDating.observe`).
        if let latency, let current = state.pointer.latency, abs(current - latency) * 1000 >= Double(io.format.rate) {
            logger.debug(
                "playback latency moved", metadata: ["from": "\(latency)", "to": "\(current)", "line_shift": "\(report.shift)"])
        }
        clock.shift(by: report.shift)
        if report.restart {
            clock.restart(position: report.frame, at: report.time, rate: io.format.rate)
            logger.debug(
                "playback clock restarted by the first delay", metadata: ["frame": "\(report.frame)", "latency": "\(state.pointer.latency ?? 0)"])
            return
        }
        let anchors = clock.anchors
        let error = clock.update(position: report.frame, at: report.time, rate: io.format.rate)
        logger.trace(
            "playback clock report",
            metadata: ["frame": "\(report.frame)", "pointer": "\(taken)", "latency": "\(state.pointer.latency ?? 0)", "now": "\(report.time)", "error_us": "\(Int(error / 1000))"])
        if clock.anchors != anchors {
            logger.debug(
                "playback clock anchored",
                metadata: ["frame": "\(report.frame)", "now": "\(report.time)", "anchors": "\(clock.anchors)"])
        }
    }

    func report(_ status: DeviceStatus) {
        source.playbackStatusChanged(status)
    }
}
