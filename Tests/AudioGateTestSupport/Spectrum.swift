import Foundation

/// Windowed-FFT measurements of spurious energy next to a test tone (e.g. resampler aliases).
public enum Spectrum {
    /// 7-term Blackman-Harris coefficients: sidelobes below -180 dB, so window leakage never
    /// masquerades as an alias at the -90 dB level tests care about. Main lobe: ±7 bins.
    static let blackmanHarris7: [Double] = [
        0.27105140069342, -0.43329793923448, 0.21812299954311, -0.06592544638803,
        0.01081174209837, -0.00077658482522, 0.00001388721735,
    ]

    /// Bins either side of the tone peak counted as the tone (covers the window's main lobe).
    public static let toneHalfWidthBins = 10

    /// Highest spur outside the tone relative to the tone peak, in dB (see `analyze`).
    public static func aliasEnergyDB(
        _ samples: [Float], rate: Int, toneFrequency: Double? = nil, maxFrequency: Double? = nil
    ) -> Double {
        analyze(samples, rate: rate, toneFrequency: toneFrequency, maxFrequency: maxFrequency).worstSpurDB
    }

    /// Analyses a power-of-two segment from the middle of `samples` (edges skipped: at most 65536
    /// samples, at least 10 % margin each side when the signal is long enough) with a 7-term
    /// Blackman-Harris window.
    ///
    /// The tone is the highest bin (or the highest within ±3 bins of `toneFrequency`); bins within
    /// `toneHalfWidthBins` of it are the tone, every other bin up to `maxFrequency` (default Nyquist)
    /// is a candidate spur.
    public static func analyze(
        _ samples: [Float], rate: Int, toneFrequency: Double? = nil, maxFrequency: Double? = nil
    ) -> SpectrumReport {
        let usable = samples.count - 2 * (samples.count / 10)
        let length = min(FFT.floorPowerOfTwo(max(usable, 1)), 1 << 16)
        guard length >= 64, rate > 0 else {
            return SpectrumReport(
                toneFrequency: 0, toneLevelDB: -400, worstSpurDB: 0, worstSpurFrequency: 0, noiseDB: 0, fftLength: 0)
        }
        let offset = (samples.count - length) / 2
        var real = [Double](repeating: 0, count: length)
        var imaginary = [Double](repeating: 0, count: length)
        var windowSum = 0.0
        for i in 0..<length {
            let phase = 2 * Double.pi * Double(i) / Double(length)
            var w = 0.0
            for (k, a) in blackmanHarris7.enumerated() { w += a * cos(Double(k) * phase) }
            windowSum += w
            real[i] = Double(samples[offset + i]) * w
        }
        FFT.transform(real: &real, imaginary: &imaginary)
        let half = length / 2
        let power = (0...half).map { real[$0] * real[$0] + imaginary[$0] * imaginary[$0] }
        let binWidth = Double(rate) / Double(length)

        var toneBin = 1
        if let toneFrequency {
            let center = min(max(Int((toneFrequency / binWidth).rounded()), 0), half)
            for k in max(0, center - 3)...min(half, center + 3) where power[k] > power[toneBin] { toneBin = k }
        } else {
            for k in 1...half where power[k] > power[toneBin] { toneBin = k }
        }
        let lastBin = maxFrequency.map { min(half, Int($0 / binWidth)) } ?? half
        let toneRange = max(0, toneBin - toneHalfWidthBins)...min(half, toneBin + toneHalfWidthBins)
        var worst = 0.0, worstBin = 0, noise = 0.0, toneEnergy = 0.0
        for k in 0...max(lastBin, 0) {
            if toneRange.contains(k) {
                toneEnergy += power[k]
            } else {
                noise += power[k]
                if power[k] > worst { worst = power[k]; worstBin = k }
            }
        }
        let tonePeak = max(power[toneBin], 1e-300)
        let amplitude = 2 * power[toneBin].squareRoot() / windowSum
        return SpectrumReport(
            toneFrequency: Double(toneBin) * binWidth,
            toneLevelDB: amplitude > 0 ? 20 * log10(amplitude) : -400,
            worstSpurDB: 10 * log10(max(worst, 1e-300) / tonePeak),
            worstSpurFrequency: Double(worstBin) * binWidth,
            noiseDB: 10 * log10(max(noise, 1e-300) / max(toneEnergy, 1e-300)),
            fftLength: length)
    }
}
