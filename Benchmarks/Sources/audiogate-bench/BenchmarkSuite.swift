import AudioGateCore
import AudioGateDevices
import Foundation

/// The DSP paths the device threads run for every period: format conversion and resampling.
@main
struct BenchmarkSuite {
    static func main() throws {
        let json = CommandLine.arguments.contains("--json")
        var results: [BenchmarkCase.Result] = []
        for benchmark in try cases() {
            let result = benchmark.measure(repetitions: 5)
            results.append(result)
            if !json {
                let factor = result.realtimeFactorPerCore.map { String(format: "%8.0fx", $0) } ?? "         "
                let name = result.name.padding(toLength: 40, withPad: " ", startingAt: 0)
                print(
                    name
                        + String(
                            format: "%9.3f ms cpu %9.3f ms wall %@ realtime/core %8.1f Msamples/s  steal %4.1f%%",
                            result.medianCPUMilliseconds, result.medianWallMilliseconds, factor,
                            result.megasamplesPerSecond, result.stealPercent))
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(results), as: UTF8.self))
        }
    }

    static func tone(rate: Int, seconds: Double, channels: Int = 1) -> [Float] {
        let count = Int(Double(rate) * seconds)
        var samples = [Float](repeating: 0, count: count * channels)
        for frame in 0..<count {
            let value = Float(0.5 * sin(2 * Double.pi * 1000 * Double(frame) / Double(rate)))
            for channel in 0..<channels { samples[frame * channels + channel] = value }
        }
        return samples
    }

    /// Resampling in 10 ms periods, as the device threads do, for `seconds` of audio.
    static func resampleCase(
        _ name: String, from input: Int, to output: Int, channels: Int = 1, quality: Resampler.Quality, seconds: Double = 10,
        engine: Resampler.Engine = .automatic
    ) throws -> BenchmarkCase {
        let resampler = try Resampler(
            inputRate: input, outputRate: output, channels: channels, quality: quality, engine: engine)
        let source = tone(rate: input, seconds: seconds, channels: channels)
        let period = input / 100 * channels
        var scratch = [Float](repeating: 0, count: resampler.maximumOutputFrames(forInputFrames: input / 100) * channels)
        return BenchmarkCase(name: name, audioSeconds: seconds, samples: source.count) {
            source.withUnsafeBufferPointer { all in
                scratch.withUnsafeMutableBufferPointer { out in
                    var offset = 0
                    while offset < all.count {
                        let end = min(offset + period, all.count)
                        resampler.process(UnsafeBufferPointer(rebasing: all[offset..<end]), into: out)
                        offset = end
                    }
                }
            }
        }
    }

    static func decodeCase(_ format: SampleFormat, seconds: Double = 10) -> BenchmarkCase {
        let samples = tone(rate: 48000, seconds: seconds)
        let bytes = SampleConversion.encode(samples, format: format)
        var output = [Float](repeating: 0, count: samples.count)
        return BenchmarkCase(name: "decode \(format.rawValue) -> float", audioSeconds: seconds, samples: samples.count) {
            bytes.withUnsafeBytes { raw in
                output.withUnsafeMutableBufferPointer { out in _ = SampleConversion.decode(raw, format: format, into: out) }
            }
        }
    }

    static func encodeCase(_ format: SampleFormat, seconds: Double = 10) -> BenchmarkCase {
        let samples = tone(rate: 48000, seconds: seconds)
        var output = [UInt8](repeating: 0, count: samples.count * format.bytesPerSample)
        return BenchmarkCase(name: "encode float -> \(format.rawValue)", audioSeconds: seconds, samples: samples.count) {
            samples.withUnsafeBufferPointer { source in
                output.withUnsafeMutableBytes { out in _ = SampleConversion.encode(source, format: format, into: out) }
            }
        }
    }

    static func downmixCase(seconds: Double = 10) -> BenchmarkCase {
        let stereo = tone(rate: 48000, seconds: seconds, channels: 2)
        var mono = [Float](repeating: 0, count: stereo.count / 2)
        return BenchmarkCase(name: "downmix stereo -> mono", audioSeconds: seconds, samples: stereo.count) {
            stereo.withUnsafeBufferPointer { source in
                mono.withUnsafeMutableBufferPointer { out in _ = ChannelMixer.downmixToMono(source, channels: 2, into: out) }
            }
        }
    }

    static func cases() throws -> [BenchmarkCase] {
        [
            try resampleCase("resample 48k->16k mono sinc fastest", from: 48000, to: 16000, quality: .fastest),
            try resampleCase(
                "resample 48k->16k mono polyphase SSE2", from: 48000, to: 16000, quality: .fastest, engine: .baselineVectors),
            try resampleCase("resample 48k->16k mono speexdsp q5", from: 48000, to: 16000, quality: .fastest, engine: .speexdsp),
            try resampleCase("resample 48k->16k mono sinc medium", from: 48000, to: 16000, quality: .medium),
            try resampleCase("resample 48k->16k mono sinc best", from: 48000, to: 16000, quality: .best, seconds: 2),
            try resampleCase("resample 24k->48k mono sinc fastest", from: 24000, to: 48000, quality: .fastest),
            try resampleCase(
                "resample 24k->48k mono polyphase SSE2", from: 24000, to: 48000, quality: .fastest, engine: .baselineVectors),
            try resampleCase("resample 24k->48k mono speexdsp q5", from: 24000, to: 48000, quality: .fastest, engine: .speexdsp),
            try resampleCase("resample 24k->48k stereo sinc fastest", from: 24000, to: 48000, channels: 2, quality: .fastest),
            try resampleCase("resample 44.1k->16k mono sinc fastest", from: 44100, to: 16000, quality: .fastest),
            decodeCase(.s16le), decodeCase(.s24le), decodeCase(.s32le), decodeCase(.f32le),
            decodeCase(.mulaw), decodeCase(.alaw),
            encodeCase(.s16le), encodeCase(.s24le), encodeCase(.s32le), encodeCase(.f32le),
            encodeCase(.mulaw), encodeCase(.alaw),
            downmixCase(),
        ]
    }
}
