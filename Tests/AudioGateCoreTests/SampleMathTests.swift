import Testing

@testable import AudioGateCore

@Suite("sample math")
struct SampleMathTests {
    @Test("accumulating adds every sample, the vector part and the tail alike", arguments: [0, 1, 7, 8, 9, 960, 963])
    func accumulate(count: Int) {
        let source = (0..<count).map { Float($0) * 0.25 - 3 }
        var output = (0..<count).map { Float($0 % 5) }
        let expected = zip(source, output).map { $0 + $1 }
        source.withUnsafeBufferPointer { from in
            output.withUnsafeMutableBufferPointer { to in
                guard let source = from.baseAddress, let target = to.baseAddress else { return }
                SampleMath.accumulate(source, into: target, count: count)
            }
        }
        #expect(output == expected)
    }

    @Test("a sample over the limit is found wherever it sits and whatever its sign")
    func exceeds() {
        for count in [1, 8, 13, 960] {
            let quiet = [Float](repeating: 0.5, count: count)
            #expect(!quiet.withUnsafeBufferPointer { SampleMath.exceeds($0.baseAddress!, count: count, limit: 0.9) })
            for position in Set([0, count / 2, count - 1]) {
                for sign: Float in [1, -1] {
                    var samples = quiet
                    samples[position] = 0.95 * sign
                    let over = samples.withUnsafeBufferPointer { SampleMath.exceeds($0.baseAddress!, count: count, limit: 0.9) }
                    #expect(over, "count \(count), at \(position), sign \(sign)")
                }
            }
        }
        #expect(![Float(2)].withUnsafeBufferPointer { SampleMath.exceeds($0.baseAddress!, count: 0, limit: 0.9) })
    }

    /// `frames` interleaved frames of `channels` ones, ramped through `ramp` in pieces of `piece` frames.
    static func ramped(_ ramp: inout GainRamp, frames: Int, channels: Int, piece: Int) -> [Float] {
        var samples = [Float](repeating: 1, count: frames * channels)
        samples.withUnsafeMutableBufferPointer { buffer in
            for start in stride(from: 0, to: frames, by: piece) {
                SampleMath.ramp(buffer.baseAddress! + start * channels, frames: min(piece, frames - start), channels: channels, &ramp)
            }
        }
        return samples
    }

    @Test("a straight ramp steps evenly to its target on its last frame and holds it after, across calls")
    func linearRamp() {
        for piece in [1, 3, 6] {
            var ramp = GainRamp(from: 0.2, to: 1, frames: 4)
            let samples = Self.ramped(&ramp, frames: 6, channels: 2, piece: piece)
            let expected: [Float] = [0.4, 0.6, 0.8, 1, 1, 1]
            for frame in 0..<6 {
                #expect(abs(samples[2 * frame] - expected[frame]) < 1e-6 && samples[2 * frame] == samples[2 * frame + 1], "\(samples)")
            }
            #expect(samples[6] == 1 && ramp.isDone && ramp.gain == 1)
        }
        // A fade out ends in silence exactly.
        var fade = GainRamp(from: 1, to: 0, frames: 240)
        #expect(Self.ramped(&fade, frames: 240, channels: 1, piece: 240).last == 0)
    }

    @Test("a ramp by a factor per frame stops at its target instead of passing it")
    func factorRamp() {
        var down = GainRamp(from: 1, to: 0.2, factor: 0.5)
        #expect(Self.ramped(&down, frames: 4, channels: 1, piece: 4) == [0.5, 0.25, 0.2, 0.2])
        var up = GainRamp(from: 0.2, to: 1, factor: 2)
        #expect(Self.ramped(&up, frames: 4, channels: 1, piece: 1) == [0.4, 0.8, 1, 1])
        // From silence a factor never arrives: the ramp is at its target at once.
        var fromSilence = GainRamp(from: 0, to: 1, factor: 2)
        #expect(fromSilence.isDone && Self.ramped(&fromSilence, frames: 2, channels: 1, piece: 2) == [1, 1])
    }

    @Test("a constant gain scales every sample; a gain of 1 leaves them as they are")
    func constantGain() {
        var half = GainRamp(constant: 0.5)
        #expect(Self.ramped(&half, frames: 3, channels: 2, piece: 3) == [Float](repeating: 0.5, count: 6))
        var unity = GainRamp(constant: 1)
        #expect(Self.ramped(&unity, frames: 3, channels: 2, piece: 3) == [Float](repeating: 1, count: 6))
    }
}
