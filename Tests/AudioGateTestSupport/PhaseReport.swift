/// Result of `PhaseContinuity.check`: where the tone is and whether it ran without gaps or jumps.
public struct PhaseReport: Sendable, Equatable {
    /// First sample whose magnitude reaches the threshold (nil: no tone found).
    public var firstToneSample: Int?
    /// Last sample whose magnitude reaches the threshold (inclusive).
    public var lastToneSample: Int?
    /// Analysis windows fitted between the onset and the end (after the edge guard).
    public var windowCount: Int
    /// Median fitted tone amplitude over those windows (linear).
    public var medianAmplitude: Double
    /// Largest phase discontinuity between consecutive good windows, in radians (0...π), after
    /// removing the steady drift a small frequency offset causes.
    public var maxPhaseJump: Double
    /// Sample index near which that largest jump happened.
    public var maxPhaseJumpSample: Int?
    /// Frequency offset of the recording relative to the expected tone, from the steady phase drift.
    public var frequencyOffsetHz: Double
    /// Sample ranges where the tone's amplitude fell more than the gap threshold below the median.
    public var gaps: [Range<Int>]

    /// Whether a tone was found, had no gaps, and no phase jump above `maxJump` radians.
    public func isContinuous(maxJump: Double = 0.1) -> Bool {
        firstToneSample != nil && gaps.isEmpty && maxPhaseJump <= maxJump
    }

    /// Tone duration from onset to end, in seconds.
    public func toneSeconds(rate: Int) -> Double {
        guard let first = firstToneSample, let last = lastToneSample, rate > 0 else { return 0 }
        return Double(last - first + 1) / Double(rate)
    }
}
