/// A gain on its way from one value to another, a frame at a time: in a straight line (volume,
/// fades) or by a constant factor per frame, a straight line in decibels (ducking). Applied by
/// `SampleMath.ramp`.
public struct GainRamp: Sendable, Equatable {
    enum Shape: Sendable, Equatable {
        case linear
        case exponential
    }

    /// The gain of the last frame stepped through.
    public private(set) var gain: Float
    public let target: Float
    /// Added to the gain each frame (linear) or multiplied into it (exponential).
    private let step: Float
    private let shape: Shape
    /// Frames a linear ramp has left, so it lands on its target exactly.
    private var framesLeft: Int

    /// A straight ramp reaching `target` from `gain` in `frames` frames; the first frame gets one step.
    public init(from gain: Float, to target: Float, frames: Int) {
        let frames = max(frames, 1)
        self.gain = gain
        self.target = target
        shape = .linear
        step = (target - gain) / Float(frames)
        framesLeft = frames
    }

    /// A ramp by a constant `factor` per frame towards `target`, arriving when it passes it. From
    /// silence a factor never arrives: such a ramp starts at its target.
    public init(from gain: Float, to target: Float, factor: Float) {
        self.gain = gain > 0 && factor != 1 ? gain : target
        self.target = target
        shape = .exponential
        step = factor
        framesLeft = 0
    }

    /// A gain that stays at `gain`.
    public init(constant gain: Float) {
        self.init(from: gain, to: gain, frames: 1)
    }

    /// The gain has reached its target.
    public var isDone: Bool { gain == target }

    /// Steps one frame; returns that frame's gain.
    @inline(__always)
    public mutating func next() -> Float {
        guard gain != target else { return gain }
        switch shape {
        case .linear:
            framesLeft -= 1
            gain = framesLeft <= 0 ? target : gain + step
        case .exponential:
            let rising = step > 1
            gain *= step
            if rising ? gain >= target : gain <= target { gain = target }
        }
        return gain
    }
}
