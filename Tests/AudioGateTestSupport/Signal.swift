import AudioGateCore
import Foundation

/// Test signal generators and simple measurements.
public enum Signal {
    /// A sine tone `amplitude * sin(2π f t + phase)`, computed in Double so long tones stay exact.
    public static func sine(
        frequency: Double, rate: Int, seconds: Double, amplitude: Double = 1, phase: Double = 0
    ) -> [Float] {
        let count = max(0, Int((seconds * Double(rate)).rounded()))
        let step = 2 * Double.pi * frequency / Double(rate)
        return (0..<count).map { n in Float(amplitude * sin(step * Double(n) + phase)) }
    }

    /// Interleaved multichannel copy of a mono signal (every channel identical).
    public static func duplicate(_ mono: [Float], channels: Int) -> [Float] {
        mono.flatMap { repeatElement($0, count: channels) }
    }

    /// Channels of equal length, interleaved frame by frame.
    public static func interleave(_ channels: [Float]...) -> [Float] {
        let frames = channels.map(\.count).min() ?? 0
        return (0..<frames).flatMap { frame in channels.map { $0[frame] } }
    }

    /// One channel of an interleaved signal.
    public static func channel(_ interleaved: [Float], channels: Int, index: Int) -> [Float] {
        stride(from: index, to: interleaved.count - channels + index + 1, by: channels).map { interleaved[$0] }
    }

    /// RMS level in dBFS (full-scale sine: -3.01), floored at -120.
    public static func rmsDBFS(_ samples: [Float]) -> Double { LevelMeter.rmsDBFS(samples) }

    /// Largest absolute sample value.
    public static func peak(_ samples: [Float]) -> Float {
        samples.reduce(0) { max($0, abs($1)) }
    }

    /// The largest difference between neighbouring samples: a click, a gap edge or integer wrap-around
    /// shows up as a step far larger than a smooth tone makes.
    public static func largestStep<Samples: RandomAccessCollection>(_ samples: Samples) -> Float
    where Samples.Element == Float {
        zip(samples, samples.dropFirst()).reduce(0) { max($0, abs($1.1 - $1.0)) }
    }

    /// Root mean square (linear).
    public static func rms(_ samples: [Float]) -> Double {
        guard !samples.isEmpty else { return 0 }
        return (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot()
    }
}
