/// Capture timestamps that advance exactly with the audio.
///
/// Each read's own estimate (now minus what is still buffered) jitters by a period or more, and a
/// sound server's delivery wanders by several milliseconds over seconds. Timestamps instead follow
/// the frame count from an anchor, through a delay-locked loop of the kind PipeWire uses
/// (`spa/utils/dll.h`): the anchor is nudged by a small share of each read's error (phase), and the
/// length of a frame by a smaller one (frequency), so a device whose clock runs apart from
/// CLOCK_MONOTONIC is followed without a lag while wander averages out. The clock re-anchors when
/// a measurement disagrees by more than `resyncNanoseconds` (after an xrun, a stall, a reopen).
struct CaptureClock {
    static let resyncNanoseconds: Int64 = 100_000_000
    /// Share of the measured error corrected per read (the loop's phase gain).
    static let slew = 0.002
    /// Share of the error per frame added to the frame length per read (the loop's frequency gain):
    /// a critically damped loop has frequency gain = phase gain² / 2.
    static let frequencyGain = slew * slew / 2
    /// How far the frame length may stray from the nominal rate: a cheap crystal is 0.1% off.
    static let maximumSkew = 0.002

    /// Where the loop expects the next read's first frame, and how long a frame lasts.
    private var next: Double?
    private var frameNanoseconds = 0.0

    /// The capture time of the first of `frames` frames just read, given the read's own estimate.
    mutating func timestamp(measured: UInt64, frames: Int, rate: Int) -> UInt64 {
        let nominal = 1e9 / Double(rate)
        guard let expected = next else {
            return reanchor(measured, frames: frames, nominal: nominal)
        }
        let error = Double(measured) - expected
        if abs(error) > Double(Self.resyncNanoseconds) {
            return reanchor(measured, frames: frames, nominal: nominal)
        }
        let stamp = expected + error * Self.slew
        let skewed = frameNanoseconds + error * Self.frequencyGain / Double(max(frames, 1))
        frameNanoseconds = min(max(skewed, nominal * (1 - Self.maximumSkew)), nominal * (1 + Self.maximumSkew))
        next = stamp + Double(frames) * frameNanoseconds
        return UInt64(max(0, stamp))
    }

    /// Forgets the anchor (after a discontinuity).
    mutating func reset() {
        next = nil
    }

    private mutating func reanchor(_ measured: UInt64, frames: Int, nominal: Double) -> UInt64 {
        frameNanoseconds = nominal
        next = Double(measured) + Double(frames) * nominal
        return measured
    }
}
