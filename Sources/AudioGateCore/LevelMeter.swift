#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Accumulates RMS and peak level over the samples added since the last reset.
public struct LevelMeter: Sendable {
    /// The level reported for silence (and for no samples), instead of -infinity, which JSON cannot carry.
    public static let floorDBFS: Double = -120

    /// Sum of squared samples since the last reset.
    public private(set) var sumOfSquares: Double = 0
    /// Samples added since the last reset.
    public private(set) var sampleCount: Int = 0
    /// Largest absolute sample since the last reset.
    public private(set) var peak: Float = 0

    /// Creates an empty meter.
    public init() {}

    /// Adds samples (any channel layout: all samples count equally).
    public mutating func add(_ samples: UnsafeBufferPointer<Float>) {
        guard let base = samples.baseAddress else { return }
        // Blocks accumulate in Float for speed; flushing every 1024 samples keeps the error negligible.
        var index = 0
        let count = samples.count
        var currentPeak = peak
        var total = sumOfSquares
        while index < count {
            let end = min(index &+ 1024, count)
            var block: Float = 0
            for i in index..<end {
                let sample = base[i]
                // NaN must not stick in the meter forever.
                guard sample == sample else { continue }
                block += sample * sample
                let magnitude = abs(sample)
                if magnitude > currentPeak { currentPeak = magnitude }
            }
            total += Double(block)
            index = end
        }
        sumOfSquares = total
        peak = currentPeak
        sampleCount &+= count
    }

    /// RMS level in dBFS (a full-scale sine reads -3.01), floored at -120.
    public var rmsDBFS: Double {
        guard sampleCount > 0 else { return Self.floorDBFS }
        return Self.dBFS(power: sumOfSquares / Double(sampleCount))
    }

    /// Peak level in dBFS, floored at -120.
    public var peakDBFS: Double { Self.dBFS(amplitude: Double(peak)) }

    /// Forgets everything added so far.
    public mutating func reset() {
        sumOfSquares = 0
        sampleCount = 0
        peak = 0
    }

    /// RMS level of an array in dBFS, floored at -120.
    public static func rmsDBFS(_ samples: [Float]) -> Double {
        var meter = LevelMeter()
        samples.withUnsafeBufferPointer { meter.add($0) }
        return meter.rmsDBFS
    }

    /// Converts a linear amplitude to dBFS, floored at -120.
    public static func dBFS(amplitude: Double) -> Double {
        guard amplitude.isFinite, amplitude > 0 else { return floorDBFS }
        return max(floorDBFS, 20 * log10(amplitude))
    }

    /// Converts a mean power (mean square) to dBFS, floored at -120.
    public static func dBFS(power: Double) -> Double {
        guard power.isFinite, power > 0 else { return floorDBFS }
        return max(floorDBFS, 10 * log10(power))
    }
}
