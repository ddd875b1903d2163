import AudioGateCore
import AudioGateTestSupport
import Foundation
import Testing

@Suite("Test-support tools")
struct TestSupportTests {
    @Test("Goertzel finds the tone to within 0.1 Hz", arguments: [440.0, 440.37, 997.3, 7000.0])
    func dominantFrequency(frequency: Double) {
        let tone = Signal.sine(frequency: frequency, rate: 48000, seconds: 1, amplitude: 0.5, phase: 0.3)
        let found = Goertzel.dominantFrequency(tone, rate: 48000)
        #expect(abs(found - frequency) < 0.1, "found \(found)")
        let near = Goertzel.dominantFrequency(tone, rate: 48000, near: frequency.rounded())
        #expect(abs(near - frequency) < 0.1, "found \(near) near \(frequency.rounded())")
    }

    @Test func dominantFrequencyOfQuantizedTone() {
        let tone = Signal.sine(frequency: 440, rate: 16000, seconds: 1.5, amplitude: 0.3)
        let s16 = SampleConversion.decode(SampleConversion.encode(tone, format: .s16le), format: .s16le)
        #expect(abs(Goertzel.dominantFrequency(s16, rate: 16000) - 440) < 0.1)
    }

    @Test func goertzelPower() {
        let tone = Signal.sine(frequency: 1000, rate: 48000, seconds: 0.5)
        #expect(abs(Goertzel.power(tone, frequency: 1000, rate: 48000)) < 0.01)
        #expect(abs(Goertzel.power(tone.map { $0 * 0.1 }, frequency: 1000, rate: 48000) - -20) < 0.01)
        #expect(Goertzel.power(tone, frequency: 3000, rate: 48000) < -100)
    }

    @Test func signalMeasurements() {
        let tone = Signal.sine(frequency: 1000, rate: 48000, seconds: 1, amplitude: 0.5, phase: .pi / 2)
        #expect(abs(Signal.rmsDBFS(tone) - (-3.0103 - 6.0206)) < 0.01)
        #expect(abs(Signal.peak(tone) - 0.5) < 1e-6)
        #expect(Signal.sine(frequency: 1, rate: 8000, seconds: 0.5).count == 4000)
        #expect(Signal.channel([1, 2, 3, 4, 5, 6], channels: 2, index: 1) == [2, 4, 6])
    }

    @Test func phaseContinuityPassesCleanTone() {
        let tone = [Float](repeating: 0, count: 4800) + Signal.sine(frequency: 440, rate: 48000, seconds: 1, amplitude: 0.5)
            + [Float](repeating: 0, count: 2400)
        let report = PhaseContinuity.check(tone, frequency: 440, rate: 48000)
        #expect(report.isContinuous(), "\(report)")
        #expect(report.gaps.isEmpty && report.maxPhaseJump < 0.01)
        // Onset within a sample or two of the true start (the sine starts at zero, crossing -40 dBFS fast).
        #expect(report.firstToneSample.map { abs($0 - 4800) <= 2 } == true)
        #expect(report.lastToneSample.map { abs($0 - (4800 + 48000 - 1)) <= 2 } == true)
        #expect(abs(report.medianAmplitude - 0.5) < 0.001 && report.windowCount > 150)
        #expect(abs(report.toneSeconds(rate: 48000) - 1) < 0.001)
    }

    @Test func phaseContinuityToleratesSmallFrequencyOffset() {
        let tone = Signal.sine(frequency: 440.2, rate: 48000, seconds: 1, amplitude: 0.5)
        let report = PhaseContinuity.check(tone, frequency: 440, rate: 48000)
        #expect(report.isContinuous(), "\(report)")
        #expect(abs(report.frequencyOffsetHz - 0.2) < 0.05)
    }

    @Test func phaseContinuityFlagsInsertedGap() {
        let tone = Signal.sine(frequency: 440, rate: 48000, seconds: 1, amplitude: 0.5)
        let gapAt = 20_000
        let withGap = Array(tone[..<gapAt]) + [Float](repeating: 0, count: 240) + Array(tone[gapAt...])
        let report = PhaseContinuity.check(withGap, frequency: 440, rate: 48000)
        #expect(!report.isContinuous())
        #expect(report.gaps.count == 1)
        #expect(report.gaps.first.map { $0.overlaps(gapAt..<(gapAt + 240)) } == true, "\(report.gaps)")
        // The tone resumes 5 ms late: 440 Hz * 5 ms = 2.2 cycles, a 0.2-cycle (1.26 rad) jump.
        #expect(abs(report.maxPhaseJump - 1.257) < 0.05, "\(report.maxPhaseJump)")
    }

    @Test func phaseContinuityFlagsDroppedAudio() {
        let tone = Signal.sine(frequency: 440, rate: 48000, seconds: 1, amplitude: 0.5)
        let skipped = Array(tone[..<20_000]) + Array(tone[20_240...])
        let report = PhaseContinuity.check(skipped, frequency: 440, rate: 48000)
        #expect(report.gaps.isEmpty)
        #expect(report.maxPhaseJump > 1 && !report.isContinuous())
        #expect(report.maxPhaseJumpSample.map { abs($0 - 20_000) < 600 } == true)
    }

    @Test func phaseContinuityWithoutTone() {
        let report = PhaseContinuity.check([Float](repeating: 0.001, count: 1000), frequency: 440, rate: 48000)
        #expect(report.firstToneSample == nil && !report.isContinuous())
    }

    @Test func spectrumSeesOnlyTheToneInCleanSignal() {
        let tone = Signal.sine(frequency: 1000, rate: 48000, seconds: 1, amplitude: 0.5)
        let report = Spectrum.analyze(tone, rate: 48000, toneFrequency: 1000)
        #expect(report.worstSpurDB < -140, "\(report)")
        #expect(abs(report.toneFrequency - 1000) < 1)
        #expect(abs(report.toneLevelDB - -6.02) < 1)
        #expect(Spectrum.aliasEnergyDB(tone, rate: 48000) < -140)
    }

    @Test func spectrumFindsAWeakSpur() {
        let tone = Signal.sine(frequency: 1000, rate: 48000, seconds: 1, amplitude: 0.5)
        let spur = Signal.sine(frequency: 15_000, rate: 48000, seconds: 1, amplitude: 0.5 * 0.0001)  // -80 dB
        let mixed = zip(tone, spur).map { $0 + $1 }
        let report = Spectrum.analyze(mixed, rate: 48000)
        #expect(abs(report.worstSpurDB - -80) < 1.5, "\(report)")
        #expect(abs(report.worstSpurFrequency - 15_000) < 2)
        // Limiting the band below the spur hides it again.
        #expect(Spectrum.aliasEnergyDB(mixed, rate: 48000, maxFrequency: 12_000) < -140)
    }

    @Test func spectrumOfS16ToneIsBelow90dB() {
        let tone = Signal.sine(frequency: 1000, rate: 16000, seconds: 1, amplitude: 0.5)
        let s16 = SampleConversion.decode(SampleConversion.encode(tone, format: .s16le), format: .s16le)
        #expect(Spectrum.aliasEnergyDB(s16, rate: 16000, toneFrequency: 1000) < -90)
    }

    @Test func fftOfImpulseIsFlat() {
        var real = [Double](repeating: 0, count: 16)
        var imaginary = [Double](repeating: 0, count: 16)
        real[0] = 1
        FFT.transform(real: &real, imaginary: &imaginary)
        #expect(real.allSatisfy { abs($0 - 1) < 1e-12 } && imaginary.allSatisfy { abs($0) < 1e-12 })
        var cosine = (0..<64).map { cos(2 * Double.pi * 5 * Double($0) / 64) }
        var zeros = [Double](repeating: 0, count: 64)
        FFT.transform(real: &cosine, imaginary: &zeros)
        #expect(abs(cosine[5] - 32) < 1e-9 && abs(cosine[59] - 32) < 1e-9 && abs(cosine[6]) < 1e-9)
    }

    @Test func stealParsing() {
        let before = Steal.parse("cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3\n")
        let after = Steal.parse("cpu  200 0 100 1550 10 0 0 140 5 0\n")
        #expect(before == StealSample(steal: 40, total: 1000))
        #expect(abs(after.percent(since: before) - 10) < 1e-9)
        #expect(Steal.parse("garbage") == StealSample(steal: 0, total: 0))
        let live = Steal.sample()
        #expect(live.total > 0 && live.steal <= live.total)
    }

    @Test func retryingOnStealPassesThroughResultsAndErrors() async throws {
        let value = try await RealTime.retryingOnSteal { 42 }
        #expect(value == 42)
        // Threshold 101 % can never be exceeded, so a failure is rethrown without a retry.
        var attempts = 0
        await #expect(throws: SignalCheckFailure.self) {
            try await RealTime.retryingOnSteal(threshold: 101) {
                attempts += 1
                try SignalCheckFailure.require(false, "tone missing")
            }
        }
        #expect(attempts == 1)
        // Threshold -1: any steal reading (even 0) counts as "above", so exactly one retry happens.
        attempts = 0
        let retried = try await RealTime.retryingOnSteal(threshold: -1) { () async throws -> Int in
            attempts += 1
            try SignalCheckFailure.require(attempts > 1, "first attempt fails")
            return attempts
        }
        #expect(retried == 2)
    }
}
