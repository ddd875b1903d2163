/// Capture timestamps that advance exactly with the audio.
///
/// Each read's own estimate (now minus what is still buffered) jitters by a period or more,
/// since sound servers report delay in coarse steps. Timestamps instead follow the frame count
/// from an anchor, slewed slowly toward the measurements so clock drift cannot accumulate, and
/// re-anchored when they disagree by more than `resyncNanoseconds` (after an xrun, a stall, a reopen).
struct CaptureClock {
    static let resyncNanoseconds: Int64 = 100_000_000
    /// Share of the measured error corrected per read.
    static let slew = 0.01

    private var anchorTime: Double?
    private var framesSinceAnchor = 0

    /// The capture time of the first of `frames` frames just read, given the read's own estimate.
    mutating func timestamp(measured: UInt64, frames: Int, rate: Int) -> UInt64 {
        guard let anchor = anchorTime else {
            return reanchor(measured, frames: frames)
        }
        let predicted = anchor + Double(framesSinceAnchor) * 1e9 / Double(rate)
        let error = Double(measured) - predicted
        if abs(error) > Double(Self.resyncNanoseconds) {
            return reanchor(measured, frames: frames)
        }
        anchorTime = anchor + error * Self.slew
        framesSinceAnchor += frames
        return UInt64(max(0, predicted + error * Self.slew))
    }

    /// Forgets the anchor (after a discontinuity).
    mutating func reset() {
        anchorTime = nil
        framesSinceAnchor = 0
    }

    private mutating func reanchor(_ measured: UInt64, frames: Int) -> UInt64 {
        anchorTime = Double(measured)
        framesSinceAnchor = frames
        return measured
    }
}
