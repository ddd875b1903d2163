import Foundation

/// How much of a known signal a recording keeps when something else is mixed into it: the user's
/// voice in a canceller's output while the agent's residual echo is there too.
extension Signal {
    /// The shift `lag` (in samples, within ±`maxLag`) at which `signal[lag...]` matches `template` best
    /// (largest normalized cross-correlation).
    public static func bestLag(of template: [Float], in signal: [Float], maxLag: Int) -> Int {
        var best = (lag: 0, score: -Double.infinity)
        template.withUnsafeBufferPointer { t in
            signal.withUnsafeBufferPointer { s in
                for lag in -maxLag...maxLag {
                    let lower = max(0, -lag)
                    let upper = min(t.count, s.count - lag)
                    guard upper - lower > t.count / 2 else { continue }
                    var dot = 0.0
                    var energy = 0.0
                    for i in lower..<upper {
                        let value = Double(s[i + lag])
                        dot += Double(t[i]) * value
                        energy += value * value
                    }
                    let score = energy > 0 ? dot / energy.squareRoot() : 0
                    if score > best.score { best = (lag, score) }
                }
            }
        }
        return best.lag
    }

    /// The level (dB, relative to `template`) of the part of `signal` that follows `template`, frame by
    /// frame: each frame of `signal` is projected onto the same frame of `template`, so anything not
    /// correlated with the template (another talker, residual echo, noise) does not count, and a
    /// per-frame gain (a suppressor ducking the template) does.
    public static func componentLevel(of template: [Float], in signal: [Float], frame: Int = 320) -> Double {
        let count = min(template.count, signal.count)
        var kept = 0.0
        var total = 0.0
        var start = 0
        while start + frame <= count {
            var dot = 0.0
            var energy = 0.0
            for i in start..<(start + frame) {
                dot += Double(signal[i]) * Double(template[i])
                energy += Double(template[i]) * Double(template[i])
            }
            if energy > 1e-12 { kept += dot * dot / energy }
            total += energy
            start += frame
        }
        guard total > 0, kept > 0 else { return -120 }
        return 10 * log10(kept / total)
    }
}
