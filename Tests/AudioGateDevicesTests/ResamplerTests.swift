import Foundation
import AudioGateTestSupport
import Testing

@testable import AudioGateDevices

/// A tone in each channel of a stereo signal, interleaved.
private func stereoTones(_ left: Double, _ right: Double, rate: Int, seconds: Double) -> [Float] {
    Signal.interleave(
        Signal.sine(frequency: left, rate: rate, seconds: seconds, amplitude: 0.5),
        Signal.sine(frequency: right, rate: rate, seconds: seconds, amplitude: 0.5))
}

/// Expects each channel of interleaved stereo `result` to carry its own tone, at its own pitch.
private func expectTonesApart(
    _ result: [Float], rate: Int, left: Double, right: Double, sourceLocation: SourceLocation = #_sourceLocation
) {
    let outLeft = Signal.channel(result, channels: 2, index: 0)
    let outRight = Signal.channel(result, channels: 2, index: 1)
    #expect(abs(Goertzel.dominantFrequency(outLeft, rate: rate, near: left) - left) < 1, sourceLocation: sourceLocation)
    #expect(abs(Goertzel.dominantFrequency(outRight, rate: rate, near: right) - right) < 1, sourceLocation: sourceLocation)
}

@Suite("resampler")
struct ResamplerTests {
    @Test(
        "a 1 kHz tone keeps its pitch and has alias energy below -90 dB",
        arguments: [(48000, 16000), (44100, 16000), (24000, 48000), (48000, 8000), (48000, 44100)])
    func tone(rates: (Int, Int)) throws {
        let (input, output) = rates
        let resampler = try Resampler(inputRate: input, outputRate: output, channels: 1, quality: .fastest)
        let tone = Signal.sine(frequency: 1000, rate: input, seconds: 2, amplitude: 0.5)
        let result = resampler.process(tone, endOfInput: true)
        #expect(abs(result.count - 2 * output) <= 2)
        let frequency = Goertzel.dominantFrequency(result, rate: output, near: 1000)
        #expect(abs(frequency - 1000) < 1)
        let spur = Spectrum.aliasEnergyDB(result, rate: output, toneFrequency: 1000)
        #expect(spur < -90, "worst spur \(spur) dB")
    }

    @Test(
        "a tone above the output's Nyquist frequency is rejected by at least 97 dB (no audible alias)",
        arguments: [(48000, 16000, 9000.0), (48000, 16000, 12000.0), (48000, 16000, 20000.0), (44100, 16000, 9500.0),
                    (48000, 8000, 5000.0), (48000, 24000, 13000.0)])
    func aliasRejection(rates: (Int, Int, Double)) throws {
        let (input, output, frequency) = rates
        let resampler = try Resampler(inputRate: input, outputRate: output, channels: 1, quality: .fastest)
        let tone = Signal.sine(frequency: frequency, rate: input, seconds: 1, amplitude: 0.5)
        let result = resampler.process(tone, endOfInput: true)
        // The middle, past the filter's start-up at either end.
        let middle = Array(result[(result.count / 4)..<(3 * result.count / 4)])
        let rejection = 20 * log10(Signal.rms(middle) / Signal.rms(tone))
        #expect(rejection < -97, "\(frequency) Hz leaks into \(output) Hz output at \(rejection) dB")
    }

    @Test("chunks of 1 frame, odd sizes and one large call give the same output")
    func chunking() throws {
        let tone = Signal.sine(frequency: 997, rate: 48000, seconds: 0.5, amplitude: 0.7)
        let whole = try Resampler(inputRate: 48000, outputRate: 16000, channels: 1).process(tone)
        for chunkSizes in [[1], [7, 13, 101], [4096]] {
            let resampler = try Resampler(inputRate: 48000, outputRate: 16000, channels: 1)
            var output: [Float] = []
            var position = 0
            var index = 0
            while position < tone.count {
                let size = min(chunkSizes[index % chunkSizes.count], tone.count - position)
                output += resampler.process(Array(tone[position..<position + size]))
                position += size
                index += 1
            }
            let common = min(output.count, whole.count)
            #expect(common > whole.count - 64)
            let worst = zip(output[..<common], whole[..<common]).map { abs($0 - $1) }.max() ?? 1
            #expect(worst < 1e-5, "chunks \(chunkSizes) differ by \(worst)")
        }
    }

    @Test("stereo stays stereo and channels stay apart")
    func stereo() throws {
        let input = stereoTones(440, 1000, rate: 48000, seconds: 1)
        let result = try Resampler(inputRate: 48000, outputRate: 24000, channels: 2).process(input, endOfInput: true)
        expectTonesApart(result, rate: 24000, left: 440, right: 1000)
    }

    @Test("equal rates pass audio through untouched; absurd ratios are refused")
    func edges() throws {
        let tone = Signal.sine(frequency: 440, rate: 16000, seconds: 0.1)
        #expect(try Resampler(inputRate: 16000, outputRate: 16000, channels: 1).process(tone) == tone)
        #expect(throws: ResamplerError.self) { try Resampler(inputRate: 0, outputRate: 16000, channels: 1) }
        #expect(throws: ResamplerError.self) { try Resampler(inputRate: 16000, outputRate: 16000, channels: 9) }
    }
}

@Suite("polyphase filter")
struct PolyphaseFilterTests {
    /// Runs `input` through a filter whole, flushing the tail as `Resampler` does.
    private func run(_ filter: PolyphaseFilter, _ input: [Float]) -> [Float] {
        let channels = filter.channels
        let padded = input + [Float](repeating: 0, count: filter.latency * channels)
        let frames = padded.count / channels
        var output = [Float](repeating: 0, count: (frames * filter.phases / filter.step + 2) * channels)
        let made = padded.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { destination in
                filter.run(source.baseAddress!, frames: frames, into: destination.baseAddress!,
                           capacity: destination.count / channels).produced
            }
        }
        return Array(output[..<(made * channels)])
    }

    @Test("only small whole-number ratios get a polyphase filter")
    func ratios() {
        #expect(PolyphaseFilter(inputRate: 48000, outputRate: 16000, channels: 1) != nil)
        #expect(PolyphaseFilter(inputRate: 24000, outputRate: 48000, channels: 1) != nil)
        #expect(PolyphaseFilter(inputRate: 48000, outputRate: 32000, channels: 2) != nil)
        #expect(PolyphaseFilter(inputRate: 48000, outputRate: 44100, channels: 1) == nil)
        #expect(PolyphaseFilter(inputRate: 44100, outputRate: 16000, channels: 1) == nil)
        #expect(PolyphaseFilter(inputRate: 16000, outputRate: 16000, channels: 1) == nil)
    }

    @Test(
        "the passband is flat to 0.15 dB up to 87 % of the lower Nyquist frequency, on both vector units",
        arguments: [(48000, 16000, 7000.0), (24000, 48000, 10400.0), (48000, 8000, 3480.0), (16000, 48000, 6900.0)])
    func passband(rates: (Int, Int, Double)) throws {
        let (input, output, frequency) = rates
        let tone = Signal.sine(frequency: frequency, rate: input, seconds: 1, amplitude: 0.5)
        for wide in [false, true] {
            let filter = try #require(PolyphaseFilter(inputRate: input, outputRate: output, channels: 1, wide: wide))
            let result = run(filter, tone)
            let middle = Array(result[(result.count / 4)..<(3 * result.count / 4)])
            let gain = 20 * log10(Signal.rms(middle) / Signal.rms(tone))
            #expect(abs(gain) < 0.15, "\(frequency) Hz at \(gain) dB (wide \(wide))")
        }
    }

    @Test("the baseline and the AVX2 products agree, and stereo channels stay apart")
    func vectorUnitsAgree() throws {
        let interleaved = stereoTones(440, 3000, rate: 24000, seconds: 0.5)
        let baseline = run(try #require(PolyphaseFilter(inputRate: 24000, outputRate: 48000, channels: 2, wide: false)), interleaved)
        let wide = run(try #require(PolyphaseFilter(inputRate: 24000, outputRate: 48000, channels: 2)), interleaved)
        #expect(baseline.count == 2 * 24000)
        #expect(baseline.count == wide.count)
        let worst = zip(baseline, wide).map { abs($0 - $1) }.max() ?? 1
        #expect(worst < 1e-5)
        expectTonesApart(baseline, rate: 48000, left: 440, right: 3000)
    }

    @Test("a constant input comes out as the same constant")
    func constant() throws {
        for (input, output) in [(48000, 16000), (24000, 48000)] {
            let filter = try #require(PolyphaseFilter(inputRate: input, outputRate: output, channels: 1))
            let result = run(filter, [Float](repeating: 0.25, count: input / 10))
            let settled = result[(filter.latency * output / input + 1)..<(result.count - filter.latency * output / input - 1)]
            #expect(settled.allSatisfy { abs($0 - 0.25) < 1e-5 })
        }
    }
}

@Suite("resampler engines")
struct ResamplerEngineTests {
    @Test(
        "the polyphase filter and speexdsp put output frame k at input frame k / ratio alike",
        arguments: [(48000, 16000), (24000, 48000)])
    func aligned(rates: (Int, Int)) throws {
        let (input, output) = rates
        let tone = Signal.sine(frequency: 1000, rate: input, seconds: 0.5, amplitude: 0.5)
        let polyphase = try Resampler(inputRate: input, outputRate: output, channels: 1, quality: .fastest, engine: .automatic)
            .process(tone, endOfInput: true)
        let speex = try Resampler(inputRate: input, outputRate: output, channels: 1, quality: .fastest, engine: .speexdsp)
            .process(tone, endOfInput: true)
        #expect(abs(polyphase.count - speex.count) <= 1)
        // Past both filters' start-up: a frame of misalignment at 1 kHz would leave a difference
        // near -20 dB of the tone; two flat, aligned filters differ by far less.
        let middle = (polyphase.count / 4)..<(3 * polyphase.count / 4)
        let difference = zip(polyphase[middle], speex[middle]).map { $0 - $1 }
        let level = 20 * log10(Signal.rms(difference) / Signal.rms(Array(speex[middle])))
        #expect(level < -60, "the two differ at \(level) dB")
    }
}
