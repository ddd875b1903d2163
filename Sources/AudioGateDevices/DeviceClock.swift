import Foundation

/// When device frames leave the card (playback) or entered it (capture), on CLOCK_MONOTONIC.
///
/// The device loop feeds it after every write or read: "device frame N is at the card's edge now"
/// (playback: frames written less `snd_pcm_delay`; capture: frames read plus what is still readable
/// and upstream). Each report jitters (a sound server's latency moves in steps at each of its timing
/// updates and in a sawtooth between them; a preemption can fall between the report and the clock
/// read), so the clock follows them through a delay-locked loop of the kind PipeWire uses
/// (`spa/utils/dll.h`): the phase error of each report, in frames, feeds two low-pass stages and an
/// integrator whose sum corrects the length of a frame. The dated line itself never jumps; it bends
/// towards the reports at the loop's bandwidth (per direction, `Tuning`), so jitter is averaged
/// over seconds while a crystal running apart from CLOCK_MONOTONIC is followed without a lag.
///
/// A report off by more than `resyncNanoseconds` several times in a row starts the line over from
/// the report (a sound server's first timing update, a stall); the loop resets it itself on a
/// reopen, an xrun or a format change. One value per open device stream, owned by its loop, which
/// hands copies to the readers of its timing.
public struct DeviceClock: Sendable {
    /// How the loop follows the reports, per direction.
    public struct Tuning: Sendable, Equatable {
        /// After an anchor, the line is placed for this long by the mean of the reports at the
        /// nominal rate before the loop takes over: a loop pulling in one report's error (a
        /// sawtooth's edge, a late report) would take seconds and overshoot.
        public var warmupSeconds: Double
        /// The loop's bandwidth in Hz once it takes over.
        public var bandwidth: Double
        /// A report this far from the line is left out of the loop (a thread preempted between the
        /// device's report and the clock read makes one late by milliseconds); `confirmations`
        /// in a row are a discontinuity, and the line starts over from the last of them.
        public var resyncNanoseconds: Double
        public var confirmations: Int

        /// Playback: `SPA_DLL_BW_MAX`. The reported delay moves in real steps of tenths of a
        /// millisecond as the sound server's latency changes, which a player next to it (snapclient,
        /// reading libpulse's timing) follows within a second or two: so does this loop, while a
        /// sawtooth of the interpolation or a late report is averaged to tens of microseconds. A
        /// sound server's latency can be milliseconds off until its first timing update and then
        /// corrects at once, and a stream that has not started yet reports a standing position:
        /// 3 ms off for 100 ms re-anchors.
        public static let playback = Tuning(
            warmupSeconds: 1, bandwidth: 0.128, resyncNanoseconds: 3_000_000, confirmations: 10)
        /// Capture: `SPA_DLL_BW_MIN` from the first read, so timestamps advance with the frame
        /// count while the reports (dated to within a period) wander by milliseconds; only a loss
        /// of 100 ms or more without an error re-anchors.
        public static let capture = Tuning(
            warmupSeconds: 0, bandwidth: 0.016, resyncNanoseconds: 100_000_000, confirmations: 1)
    }

    /// The loop filter of `spa/utils/dll.h`: error in frames in, rate correction out.
    struct Loop: Sendable {
        private(set) var bandwidth = 0.0
        private(set) var period = 0.0
        private var z1 = 0.0
        private var z2 = 0.0
        private var z3 = 0.0
        private var w0 = 0.0
        private var w1 = 0.0
        private var w2 = 0.0

        /// Sets the bandwidth (Hz) for updates `period` frames apart at `rate`; keeps the state.
        mutating func setBandwidth(_ bandwidth: Double, period: Double, rate: Double) {
            let w = 2 * Double.pi * bandwidth * period / rate
            w0 = 1 - exp(-20 * w)
            w1 = w * 1.5 / period
            w2 = w / 1.5
            self.bandwidth = bandwidth
            self.period = period
        }

        /// The factor to multiply the rate by, from this update's phase error in frames.
        mutating func update(error: Double) -> Double {
            z1 += w0 * (w1 * error - z1)
            z2 += w0 * (z1 - z2)
            z3 += w2 * z2
            return 1 - (z2 + z3)
        }
    }

    /// How far the rate may stray from nominal: a cheap crystal is 0.1 % off.
    static let maximumSkew = 0.002

    public let tuning: Tuning
    /// The rate of the frames dated (0 before the first report).
    public private(set) var rate = 0
    /// Counts anchorings (reset or discontinuity, then a report): each starts the dated line over.
    public private(set) var anchors: UInt64 = 0
    /// Counts the runs of the device: the first report after a reset (a reopen, an xrun, a restart
    /// after idling) or a rate change. A new run plays with another delay, so what was learnt about
    /// the old one (an echo path) is off; a discontinuity within a run (a sound server's latency
    /// moving by milliseconds) re-anchors the line but is not a new run.
    public private(set) var runs: UInt64 = 0
    private var loop = Loop()
    private var anchored = false
    /// Device frame `anchorFrame` is at the card's edge at `anchorTime` (monotonic ns).
    private var anchorFrame = 0.0
    private var anchorTime = 0.0
    private var nanosecondsPerFrame = 0.0
    private var outliers = 0
    /// While warming up: where the anchor put the line, and the sum and count of the reports'
    /// errors from it at the nominal rate.
    private var warming = false
    private var warmupFrame = 0.0
    private var warmupTime = 0.0
    private var warmupError = 0.0
    private var warmupReports = 0

    /// A clock with nothing reported yet.
    public init(tuning: Tuning) {
        self.tuning = tuning
    }

    /// Whether a report has dated the frames since the last reset.
    public var isAnchored: Bool { anchored }

    /// The loop's current bandwidth in Hz (0 before the first report).
    public var bandwidth: Double { anchored ? loop.bandwidth : 0 }

    /// Forgets the dating (a reopen, an xrun, a dropped buffer): the next report anchors afresh.
    public mutating func reset() {
        anchored = false
        outliers = 0
    }

    /// Reports that device frame `frame` is at the card's edge at `now` (monotonic ns); returns
    /// how far the report was from the line in nanoseconds (0 for a report that anchors).
    @discardableResult
    public mutating func update(frame: UInt64, at now: UInt64, rate: Int) -> Double {
        update(position: Double(frame), at: now, rate: rate)
    }

    /// Reports that the (fractional) device frame `position` is at the card's edge at `now`.
    @discardableResult
    public mutating func update(position: Double, at now: UInt64, rate: Int) -> Double {
        guard rate > 0 else { return 0 }
        if rate != self.rate {
            self.rate = rate
            anchored = false
        }
        let nominal = 1e9 / Double(rate)
        guard anchored else {
            runs &+= 1
            anchor(position, at: Double(now), nominal: nominal)
            return 0
        }
        if warming, let error = warmUp(position, at: Double(now), nominal: nominal) { return error }
        let elapsed = position - anchorFrame
        let predicted = anchorTime + elapsed * nanosecondsPerFrame
        let error = Double(now) - predicted
        if abs(error) > tuning.resyncNanoseconds {
            outliers += 1
            if outliers >= tuning.confirmations { anchor(position, at: Double(now), nominal: nominal) }
            return error
        }
        outliers = 0
        if elapsed > 0 {
            // The spa filter's gains are per update: they follow the spacing of the reports.
            if abs(elapsed - loop.period) > loop.period / 4 {
                loop.setBandwidth(loop.bandwidth, period: elapsed, rate: Double(rate))
            }
        }
        let correction = loop.update(error: error / nominal)
        let bounded = min(max(correction, 1 - Self.maximumSkew), 1 + Self.maximumSkew)
        nanosecondsPerFrame = nominal / bounded
        anchorFrame = position
        anchorTime = predicted
        return error
    }

    /// Starts the line over from this report within the same run (a source of dating that has
    /// just learnt where the speaker is): unlike `reset`, not a new run of the device.
    public mutating func restart(position: Double, at now: UInt64, rate: Int) {
        guard anchored, rate == self.rate else {
            update(position: position, at: now, rate: rate)
            return
        }
        anchor(position, at: Double(now), nominal: 1e9 / Double(rate))
    }

    /// Moves the line by `frames` at once, keeping its rate: the reports from now on date each frame
    /// that much later (a source of dating that learnt a new constant between its reports and the
    /// card's edge), which the loop, pulling in a step, would reach only seconds later and overshoot.
    public mutating func shift(by frames: Double) {
        guard anchored, frames != 0 else { return }
        anchorFrame -= frames
        warmupFrame -= frames
    }

    /// Monotonic nanoseconds at which device frame `frame` is at the card's edge; nil until dated.
    public func time(ofFrame frame: UInt64) -> Double? {
        time(ofPosition: Double(frame))
    }

    /// Monotonic nanoseconds at which the (fractional) device frame `position` is at the card's edge.
    public func time(ofPosition position: Double) -> Double? {
        guard anchored else { return nil }
        return anchorTime + (position - anchorFrame) * nanosecondsPerFrame
    }

    /// The device frame (fractional) at the card's edge at `time` (monotonic ns); nil until dated.
    public func frame(at time: UInt64) -> Double? {
        guard anchored else { return nil }
        return anchorFrame + (Double(time) - anchorTime) / nanosecondsPerFrame
    }

    /// Places the line by the mean error of the reports so far and returns the report's error; nil
    /// once warm-up is over or the report is a discontinuity, which the loop then handles.
    private mutating func warmUp(_ position: Double, at now: Double, nominal: Double) -> Double? {
        let error = now - (warmupTime + (position - warmupFrame) * nominal)
        guard abs(error) <= tuning.resyncNanoseconds else { return nil }
        outliers = 0
        warmupError += error
        warmupReports += 1
        anchorFrame = position
        anchorTime = warmupTime + warmupError / Double(warmupReports) + (position - warmupFrame) * nominal
        if position - warmupFrame >= tuning.warmupSeconds * Double(rate) { warming = false }
        return error
    }

    private mutating func anchor(_ frame: Double, at time: Double, nominal: Double) {
        anchorFrame = frame
        anchorTime = time
        nanosecondsPerFrame = nominal
        outliers = 0
        loop = Loop()
        // Until the spacing of reports is seen, a 10 ms period.
        loop.setBandwidth(tuning.bandwidth, period: Double(rate) / 100, rate: Double(rate))
        warming = tuning.warmupSeconds > 0
        warmupFrame = frame
        warmupTime = time
        // The anchoring report itself, with no error from the line it sets.
        warmupError = 0
        warmupReports = 1
        anchored = true
        anchors &+= 1
    }
}
