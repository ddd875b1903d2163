import Foundation

/// Checks that a known tone in a recording plays continuously: no gaps, no skipped or repeated audio.
public enum PhaseContinuity {
    /// Finds the tone (onset/end by threshold), fits amplitude and phase of `frequency` in
    /// overlapping windows (hop = half a window) and in quarter-length sub-windows for gaps.
    ///
    /// - `thresholdDBFS`: a sample at or above this magnitude (as dBFS amplitude) counts as tone.
    /// - `gapDB`: a sub-window whose amplitude is this far below the median is a gap.
    /// - `edgeGuardMilliseconds`: skipped after the onset and before the end, so fade-in and filter
    ///   ringing at the edges are not reported (default: one window).
    public static func check(
        _ samples: [Float],
        frequency: Double,
        rate: Int,
        windowMilliseconds: Double = 10,
        thresholdDBFS: Double = -40,
        gapDB: Double = 6,
        edgeGuardMilliseconds: Double? = nil
    ) -> PhaseReport {
        var report = PhaseReport(
            firstToneSample: nil, lastToneSample: nil, windowCount: 0, medianAmplitude: 0,
            maxPhaseJump: 0, maxPhaseJumpSample: nil, frequencyOffsetHz: 0, gaps: [])
        guard rate > 0, !samples.isEmpty else { return report }
        let threshold = Float(pow(10, thresholdDBFS / 20))
        guard let first = samples.firstIndex(where: { abs($0) >= threshold }),
              let last = samples.lastIndex(where: { abs($0) >= threshold })
        else { return report }
        report.firstToneSample = first
        report.lastToneSample = last

        let window = max(8, Int(Double(rate) * windowMilliseconds / 1000))
        let hop = max(1, window / 2)
        let sub = max(4, window / 4)
        let subHop = max(1, sub / 2)
        let guardSamples = Int(Double(rate) * (edgeGuardMilliseconds ?? windowMilliseconds) / 1000)
        let start = first + guardSamples
        let end = last + 1 - guardSamples
        guard end - start >= window else { return report }

        var fits: [(start: Int, fit: ToneFit)] = []
        var position = start
        while position + window <= end {
            fits.append((position, ToneFit.fit(samples, range: position..<(position + window), frequency: frequency, rate: rate)))
            position += hop
        }
        report.windowCount = fits.count
        let median = fits.map(\.fit.amplitude).sorted()[fits.count / 2]
        report.medianAmplitude = median
        let floor = median * pow(10, -gapDB / 20)

        // Phase is referenced to the absolute sample index, so a continuous tone keeps it constant;
        // a steady drift means a small frequency offset and is removed before looking for jumps.
        let isGood = fits.map { $0.fit.amplitude >= floor }
        var perHopSteps: [Double] = []
        for k in 0..<max(0, fits.count - 1) where isGood[k] && isGood[k + 1] {
            perHopSteps.append(wrap(fits[k + 1].fit.phase - fits[k].fit.phase))
        }
        let perHop = perHopSteps.sorted().median ?? 0
        report.frequencyOffsetHz = perHop / (2 * Double.pi * Double(hop) / Double(rate))
        // Windows overlap by half, so a splice smears over neighbours; comparing each window with
        // the next good one at least 3 hops later puts every splice cleanly between two windows.
        let distance = fits.count >= 4 ? 3 : 1
        for k in fits.indices where isGood[k] {
            guard let j = (k + distance..<max(fits.count, k + distance)).first(where: { isGood[$0] }) else { break }
            let jump = abs(wrap(fits[j].fit.phase - fits[k].fit.phase - perHop * Double(j - k)))
            if jump > report.maxPhaseJump {
                report.maxPhaseJump = jump
                report.maxPhaseJumpSample = (fits[k].start + window + fits[j].start) / 2
            }
        }

        var gaps: [Range<Int>] = []
        position = start
        while position + sub <= end {
            let range = position..<(position + sub)
            if ToneFit.fit(samples, range: range, frequency: frequency, rate: rate).amplitude < floor {
                if let lastGap = gaps.last, lastGap.upperBound >= range.lowerBound {
                    gaps[gaps.count - 1] = lastGap.lowerBound..<range.upperBound
                } else {
                    gaps.append(range)
                }
            }
            position += subHop
        }
        report.gaps = gaps
        return report
    }

    /// Wraps an angle into (-π, π].
    static func wrap(_ angle: Double) -> Double {
        var a = angle.truncatingRemainder(dividingBy: 2 * Double.pi)
        if a > Double.pi { a -= 2 * Double.pi }
        if a <= -Double.pi { a += 2 * Double.pi }
        return a
    }
}

extension Array where Element == Double {
    /// Middle element of a sorted array (nil when empty).
    fileprivate var median: Double? { isEmpty ? nil : self[count / 2] }
}
