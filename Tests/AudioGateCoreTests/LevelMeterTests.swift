import AudioGateCore
import AudioGateTestSupport
import Testing

@Suite("Level meter")
struct LevelMeterTests {
    @Test func fullScaleSine() {
        let sine = Signal.sine(frequency: 1000, rate: 48000, seconds: 1, amplitude: 1, phase: .pi / 2)
        var meter = LevelMeter()
        sine.withUnsafeBufferPointer { meter.add($0) }
        #expect(abs(meter.rmsDBFS - -3.0103) < 0.01)
        #expect(abs(meter.peakDBFS) < 0.001)
        #expect(abs(LevelMeter.rmsDBFS(sine) - -3.0103) < 0.01)
    }

    @Test func halfScaleSquareAndReset() {
        var meter = LevelMeter()
        let square: [Float] = (0..<4800).map { $0 % 2 == 0 ? 0.5 : -0.5 }
        square.withUnsafeBufferPointer { meter.add($0) }
        #expect(abs(meter.rmsDBFS - -6.0206) < 0.001)
        #expect(abs(meter.peakDBFS - -6.0206) < 0.001)
        meter.reset()
        #expect(meter.rmsDBFS == -120 && meter.peakDBFS == -120 && meter.sampleCount == 0)
    }

    @Test(arguments: [13, 1029]) func negativePeakAnywhere(index: Int) {
        // 1029 falls in the tail of a 1030-sample block that is not a whole number of vectors.
        var samples = [Float](repeating: 0.01, count: 1030)
        samples[index] = -0.5
        var meter = LevelMeter()
        samples.withUnsafeBufferPointer { meter.add($0) }
        #expect(meter.peak == 0.5)
    }

    @Test func silenceAndNaNFloorAt120() {
        var meter = LevelMeter()
        [Float](repeating: 0, count: 100).withUnsafeBufferPointer { meter.add($0) }
        #expect(meter.rmsDBFS == -120 && meter.peakDBFS == -120)
        [Float.nan].withUnsafeBufferPointer { meter.add($0) }
        #expect(meter.rmsDBFS == -120 && meter.peakDBFS.isFinite)
        #expect(LevelMeter.rmsDBFS([]) == -120)
    }
}
