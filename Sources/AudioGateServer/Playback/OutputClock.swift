/// When each device frame leaves the card, from the delay the device reports after each write.
///
/// After a write of `written` frames with `delay` frames still ahead of the speaker, frame
/// `written - delay` leaves now, which dates device frame 0 at `now - (written - delay) / rate`.
/// That estimate jitters with the sound server's timing updates (the pulse plugin reports
/// PulseAudio's interpolated latency) and with a preemption between the delay and the clock read;
/// the median of the last `window` estimates rides those out, smoothed further over about a second.
/// A jump that persists (an xrun, a device restart) starts the estimate over.
///
/// A value kept under the mixer's lock; the arrays are allocated once, so updates never allocate.
struct OutputClock {
    static let window = 31
    /// An estimate this far from the median is a discontinuity once it repeats.
    static let jumpNanoseconds = 20_000_000.0
    static let jumpConfirmations = 3

    private(set) var rate = 0
    private var estimates: [Double]
    private var sorted: [Double]
    private var count = 0
    private var next = 0
    private var outliers = 0
    /// The median of the window, smoothed over `smoothingEstimates` writes: the pulse plugin's
    /// interpolated latency wanders in a sawtooth of a few tenths of a millisecond between its
    /// timing updates, which a plain median follows.
    private var smoothed: Double?
    private var smoothedCount = 0
    static let smoothingEstimates = 100

    /// Monotonic nanoseconds at which device frame 0 leaves the card (nil until a delay was seen).
    var epoch: Double? { smoothed }

    init() {
        estimates = [Double](repeating: 0, count: Self.window)
        sorted = [Double](repeating: 0, count: Self.window)
    }

    /// Forgets every estimate (the device was reopened or its format changed).
    mutating func reset() {
        count = 0
        next = 0
        outliers = 0
        smoothed = nil
        smoothedCount = 0
    }

    /// Adds the estimate of one write: `now` read just after the delay.
    mutating func add(now: UInt64, framesWritten: UInt64, delayFrames: Int, rate: Int) {
        // A zero delay is reported when the buffer was dropped or not started: not a measurement.
        guard delayFrames > 0, rate > 0 else { return }
        if rate != self.rate {
            reset()
            self.rate = rate
        }
        let estimate = Double(now) - (Double(framesWritten) - Double(delayFrames)) * 1e9 / Double(rate)
        if let epoch, abs(estimate - epoch) > Self.jumpNanoseconds {
            outliers += 1
            guard outliers >= Self.jumpConfirmations else { return }
            reset()
            self.rate = rate
        }
        outliers = 0
        if count == Self.window {
            // The oldest estimate leaves the sorted copy before the new one goes in.
            let evicted = estimates[next]
            var index = 0
            while index < count - 1, sorted[index] != evicted { index += 1 }
            while index < count - 1 {
                sorted[index] = sorted[index + 1]
                index += 1
            }
            count -= 1
        }
        estimates[next] = estimate
        next = (next + 1) % Self.window
        var position = count
        while position > 0, sorted[position - 1] > estimate {
            sorted[position] = sorted[position - 1]
            position -= 1
        }
        sorted[position] = estimate
        count += 1
        let median = median()
        smoothedCount = min(smoothedCount + 1, Self.smoothingEstimates)
        // A running mean at first, then an exponential one.
        smoothed = smoothed.map { $0 + (median - $0) / Double(smoothedCount) } ?? median
    }

    /// Monotonic nanoseconds at which device frame `frame` leaves the card.
    func leaveTime(ofDeviceFrame frame: UInt64) -> Double? {
        guard let epoch, rate > 0 else { return nil }
        return epoch + Double(frame) * 1e9 / Double(rate)
    }

    /// The middle of the sorted window, kept sorted one insertion at a time.
    private func median() -> Double {
        count % 2 == 1 ? sorted[count / 2] : (sorted[count / 2 - 1] + sorted[count / 2]) / 2
    }
}
