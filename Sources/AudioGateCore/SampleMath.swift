/// Loops over float samples that the mixer runs every period, written so the compiler turns them
/// into vector code (no early exits, no order-dependent float reductions).
public enum SampleMath {
    /// Adds `count` samples of `source` into `output`.
    public static func accumulate(_ source: UnsafePointer<Float>, into output: UnsafeMutablePointer<Float>, count: Int) {
        for index in 0..<count { output[index] += source[index] }
    }

    /// Adds `count` samples of `source`, times `gain`, into `output`.
    public static func accumulate(_ source: UnsafePointer<Float>, into output: UnsafeMutablePointer<Float>, count: Int, gain: Float) {
        for index in 0..<count { output[index] += source[index] * gain }
    }

    /// Adds `frames` interleaved frames of `source` into `output`, each frame times its gain in `curve`.
    public static func accumulate(
        _ source: UnsafePointer<Float>, into output: UnsafeMutablePointer<Float>, frames: Int, channels: Int,
        curve: UnsafePointer<Float>
    ) {
        for frame in 0..<frames {
            let gain = curve[frame]
            for channel in 0..<channels { output[frame * channels + channel] += source[frame * channels + channel] * gain }
        }
    }

    /// Whether any of `count` samples has a magnitude above `limit`.
    public static func exceeds(_ samples: UnsafePointer<Float>, count: Int, limit: Float) -> Bool {
        var over: UInt32 = 0
        for index in 0..<count { over |= samples[index].magnitude > limit ? 1 : 0 }
        return over != 0
    }
}

extension SampleMath {
    /// Multiplies `frames` interleaved frames of `samples` by the gains `ramp` steps through, one
    /// per frame; past the ramp's end, by its target. The one way any gain changes over time
    /// (volume, ducking, a stream's gain, fades), so none of them clicks.
    public static func ramp(_ samples: UnsafeMutablePointer<Float>, frames: Int, channels: Int, _ ramp: inout GainRamp) {
        if ramp.isDone {
            let gain = ramp.target
            guard gain != 1 else { return }
            for index in 0..<(frames * channels) { samples[index] *= gain }
            return
        }
        for frame in 0..<frames {
            let gain = ramp.next()
            for channel in 0..<channels { samples[frame * channels + channel] *= gain }
        }
    }
}
