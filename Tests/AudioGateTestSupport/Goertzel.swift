import Foundation

/// Single-frequency DFT measurements and a precise frequency estimator.
public enum Goertzel {
    /// Level of `frequency` in dB relative to a full-scale sine (a full-scale sine at that frequency reads ≈ 0 dB).
    ///
    /// Rectangular window: exact for a whole number of cycles, otherwise within a fraction of a dB
    /// for signals of many cycles.
    public static func power(_ samples: [Float], frequency: Double, rate: Int) -> Double {
        let magnitude = amplitude(samples, frequency: frequency, rate: rate)
        return magnitude > 0 ? 20 * log10(magnitude) : -400
    }

    /// Linear amplitude of `frequency` (1.0 for a full-scale sine), rectangular window.
    public static func amplitude(_ samples: [Float], frequency: Double, rate: Int) -> Double {
        guard !samples.isEmpty else { return 0 }
        let values = samples.map(Double.init)
        return 2 * magnitude(values, frequency: frequency, rate: rate) / Double(values.count)
    }

    /// The frequency of the strongest tone, refined far below one DFT bin.
    ///
    /// A Hann-windowed FFT finds the peak bin above 5 Hz (with `near`, only within
    /// `near` ± max(10 %, 5 Hz)). The peak of the Hann-windowed DTFT magnitude is then
    /// located by golden-section search, so a clean 1 s tone is found to about 1 mHz.
    public static func dominantFrequency(_ samples: [Float], rate: Int, near: Double? = nil) -> Double {
        guard samples.count >= 16, rate > 0 else { return 0 }
        let n = samples.count
        let windowed = hannWindowed(samples)
        let fullBin = Double(rate) / Double(n)
        let length = min(FFT.floorPowerOfTwo(n), 1 << 17)
        let offset = (n - length) / 2
        var real = hannWindowed(Array(samples[offset..<(offset + length)]))
        var imaginary = [Double](repeating: 0, count: length)
        FFT.transform(real: &real, imaginary: &imaginary)
        let bin = Double(rate) / Double(length)
        var low = 5.0, high = Double(rate) / 2
        if let near {
            let span = max(near * 0.1, 5)
            low = max(low, near - span)
            high = min(high, near + span)
        }
        let firstBin = max(1, Int((low / bin).rounded(.up)))
        let lastBin = min(length / 2 - 1, Int(high / bin))
        var bestBin = firstBin
        var best = -1.0
        for k in firstBin...max(firstBin, lastBin) {
            let p = real[k] * real[k] + imaginary[k] * imaginary[k]
            if p > best { best = p; bestBin = k }
        }
        // Scan the full-length spectrum across the coarse bin in quarter-lobe steps, so the
        // golden-section search starts inside the main lobe and cannot settle on a sidelobe.
        let center = Double(bestBin) * bin
        let step = fullBin / 4
        var coarse = center
        var bestFine = -1.0
        var f = max(center - bin, step)
        while f <= center + bin {
            let m = magnitude(windowed, frequency: f, rate: rate)
            if m > bestFine { bestFine = m; coarse = f }
            f += step
        }
        let halfSpan = step
        return goldenSectionPeak(windowed, rate: rate, low: coarse - halfSpan, high: coarse + halfSpan)
    }

    /// |X(f)| of already-prepared samples via the Goertzel recurrence.
    public static func magnitude(_ values: [Double], frequency: Double, rate: Int) -> Double {
        let omega = 2 * Double.pi * frequency / Double(rate)
        let coefficient = 2 * cos(omega)
        var s1 = 0.0, s2 = 0.0
        for x in values {
            let s0 = x + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
        return max(power, 0).squareRoot()
    }

    private static func hannWindowed(_ samples: [Float]) -> [Double] {
        let n = samples.count
        guard n > 1 else { return samples.map(Double.init) }
        let scale = 2 * Double.pi / Double(n - 1)
        return samples.enumerated().map { index, x in Double(x) * (0.5 - 0.5 * cos(scale * Double(index))) }
    }

    private static func goldenSectionPeak(_ values: [Double], rate: Int, low: Double, high: Double) -> Double {
        let ratio = (5.0.squareRoot() - 1) / 2
        var a = low, b = high
        var c = b - ratio * (b - a), d = a + ratio * (b - a)
        var fc = magnitude(values, frequency: c, rate: rate)
        var fd = magnitude(values, frequency: d, rate: rate)
        for _ in 0..<60 where b - a > 1e-6 {
            if fc > fd {
                b = d; d = c; fd = fc
                c = b - ratio * (b - a)
                fc = magnitude(values, frequency: c, rate: rate)
            } else {
                a = c; c = d; fc = fd
                d = a + ratio * (b - a)
                fd = magnitude(values, frequency: d, rate: rate)
            }
        }
        return (a + b) / 2
    }
}
