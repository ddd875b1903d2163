/// Loops over float samples that the mixer runs every period, written so the compiler turns them
/// into vector code (no early exits, no order-dependent float reductions).
public enum SampleMath {
    /// Adds `count` samples of `source` into `output`.
    public static func accumulate(_ source: UnsafePointer<Float>, into output: UnsafeMutablePointer<Float>, count: Int) {
        for index in 0..<count { output[index] += source[index] }
    }

    /// Whether any of `count` samples has a magnitude above `limit`.
    public static func exceeds(_ samples: UnsafePointer<Float>, count: Int, limit: Float) -> Bool {
        var over: UInt32 = 0
        for index in 0..<count { over |= samples[index].magnitude > limit ? 1 : 0 }
        return over != 0
    }
}
