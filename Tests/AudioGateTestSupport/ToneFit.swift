import Foundation

/// Least-squares fit of a sinusoid of known frequency: `x[n] ≈ amplitude * cos(ω n + phase)`.
public struct ToneFit: Sendable, Equatable {
    /// Fitted amplitude (linear, full scale 1).
    public var amplitude: Double
    /// Fitted phase in radians, relative to absolute sample index `n` (so a continuous tone keeps it constant).
    public var phase: Double
    /// RMS of what the fitted tone leaves unexplained.
    public var residualRMS: Double

    /// Fits `samples[range]` with the tone, using the absolute index as time.
    public static func fit(_ samples: [Float], range: Range<Int>, frequency: Double, rate: Int) -> ToneFit {
        let omega = 2 * Double.pi * frequency / Double(rate)
        var scc = 0.0, sss = 0.0, scs = 0.0, sxc = 0.0, sxs = 0.0, sxx = 0.0
        for n in range {
            let angle = omega * Double(n)
            let c = cos(angle), s = sin(angle)
            let x = Double(samples[n])
            scc += c * c
            sss += s * s
            scs += c * s
            sxc += x * c
            sxs += x * s
            sxx += x * x
        }
        let determinant = scc * sss - scs * scs
        guard determinant > 1e-12 * max(scc * sss, 1e-300) else {
            return ToneFit(amplitude: 0, phase: 0, residualRMS: range.isEmpty ? 0 : (sxx / Double(range.count)).squareRoot())
        }
        // x ≈ a cos + b sin  =  A cos(ωn + φ) with a = A cos φ, b = -A sin φ.
        let a = (sxc * sss - sxs * scs) / determinant
        let b = (sxs * scc - sxc * scs) / determinant
        let explained = a * sxc + b * sxs
        let residual = max(0, sxx - explained) / Double(range.count)
        return ToneFit(amplitude: (a * a + b * b).squareRoot(), phase: atan2(-b, a), residualRMS: residual.squareRoot())
    }
}
