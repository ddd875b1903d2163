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
        // Eight lanes at a time, in Float blocks flushed to Double every 1024 samples: the capture
        // thread meters every period, so this runs at SIMD speed and the error stays negligible.
        var index = 0
        let count = samples.count
        var total = sumOfSquares
        var peaks = SIMD8<Float>(repeating: peak)
        let raw = UnsafeRawPointer(base)
        while index < count {
            let end = min(index &+ 1024, count)
            var block = SIMD8<Float>()
            while index &+ 8 <= end {
                var lanes = raw.loadUnaligned(fromByteOffset: index &* 4, as: SIMD8<Float>.self)
                // NaN must not stick in the meter forever: it counts as silence.
                lanes.replace(with: 0, where: lanes .!= lanes)
                block += lanes * lanes
                // The magnitude by clearing the sign bit and the maximum by a compare and select:
                // the stdlib's generic `pointwiseMax` goes lane by lane through a call per vector.
                let magnitude = unsafeBitCast(
                    unsafeBitCast(lanes, to: SIMD8<UInt32>.self) & 0x7FFF_FFFF, to: SIMD8<Float>.self)
                peaks.replace(with: magnitude, where: magnitude .> peaks)
                index &+= 8
            }
            var tail: Float = 0
            var tailPeak: Float = 0
            while index < end {
                let sample = base[index]
                if sample == sample {
                    tail += sample * sample
                    tailPeak = max(tailPeak, abs(sample))
                }
                index &+= 1
            }
            peaks.replace(with: tailPeak, where: peaks .< tailPeak)
            total += Double(block.sum() + tail)
        }
        sumOfSquares = total
        peak = peaks.max()
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
