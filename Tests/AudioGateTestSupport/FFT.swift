import Foundation

/// An in-place iterative radix-2 complex FFT in Double precision.
public enum FFT {
    /// Transforms `real`/`imaginary` in place; both must have the same power-of-two length.
    public static func transform(real: inout [Double], imaginary: inout [Double]) {
        let n = real.count
        precondition(n == imaginary.count && n > 0 && n & (n - 1) == 0, "FFT length must be a power of two")
        guard n > 1 else { return }
        var j = 0
        for i in 1..<n {
            var bit = n >> 1
            while j & bit != 0 {
                j ^= bit
                bit >>= 1
            }
            j |= bit
            if i < j {
                real.swapAt(i, j)
                imaginary.swapAt(i, j)
            }
        }
        var length = 2
        while length <= n {
            let angle = -2 * Double.pi / Double(length)
            let half = length / 2
            // Twiddles computed directly (not by recurrence) so a 2^20 transform keeps ~1e-15 accuracy.
            let twiddleReal = (0..<half).map { cos(angle * Double($0)) }
            let twiddleImaginary = (0..<half).map { sin(angle * Double($0)) }
            var start = 0
            while start < n {
                for k in 0..<half {
                    let even = start + k, odd = even + half
                    let tr = real[odd] * twiddleReal[k] - imaginary[odd] * twiddleImaginary[k]
                    let ti = real[odd] * twiddleImaginary[k] + imaginary[odd] * twiddleReal[k]
                    real[odd] = real[even] - tr
                    imaginary[odd] = imaginary[even] - ti
                    real[even] += tr
                    imaginary[even] += ti
                }
                start += length
            }
            length *= 2
        }
    }

    /// Largest power of two not above `n` (0 for n < 1).
    public static func floorPowerOfTwo(_ n: Int) -> Int {
        guard n >= 1 else { return 0 }
        var p = 1
        while p * 2 <= n { p *= 2 }
        return p
    }

    /// Smallest power of two not below `n`.
    public static func ceilPowerOfTwo(_ n: Int) -> Int {
        var p = 1
        while p < n { p *= 2 }
        return p
    }
}
