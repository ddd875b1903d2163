import AudioGateCore
import AudioGateTestSupport
import Testing

@Suite("Fuzzing")
struct FuzzTests {
    /// Valid starting points the mutator damages.
    static func wavSeeds() -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        for sample in [SampleFormat.u8, .s16le, .s24le3, .f32le] {
            seeds.append(WAVHeader.encode(format: AudioFormat(rate: 48000, channels: 2, sampleFormat: sample), dataByteCount: 64) + [UInt8](repeating: 1, count: 16))
        }
        var builder = WAVBuilder()
        builder.add("LIST", [UInt8](repeating: 0x41, count: 13))
        builder.add("fmt ", WAVBuilder.extensible(subformat: 3, channels: 1, rate: 44100, bits: 32))
        builder.add("data", [0, 0, 0, 0])
        seeds.append(builder.bytes())
        return seeds
    }

    @Test("WAVHeader.parse survives 120,000 random and mutated inputs")
    func wavHeaderFuzz() {
        var generator = SeededGenerator(seed: 0x5741_5645)
        let seeds = Self.wavSeeds()
        var outcomes: [String: Int] = [:]
        for iteration in 0..<120_000 {
            let input: [UInt8]
            if iteration % 4 == 0 {
                let prefix: [UInt8] = iteration % 8 == 0 ? Array("RIFF".utf8) + generator.bytes(4) + Array("WAVE".utf8) : []
                input = prefix + generator.bytes(Int.random(in: 0...96, using: &generator))
            } else {
                input = generator.mutate(seeds[iteration % seeds.count], edits: 4, headBytes: 64)
            }
            do {
                let header = try WAVHeader.parse(input)
                // Whatever parses must be self-consistent.
                if header.dataOffset > input.count || ![1, 2].contains(header.format.channels) {
                    outcomes["inconsistent", default: 0] += 1
                }
                outcomes["ok", default: 0] += 1
            } catch {
                outcomes[error.code.rawValue, default: 0] += 1
            }
        }
        #expect(outcomes["inconsistent"] == nil)
        // The mix shows the fuzzer reaches deep into the parser, not just the magic check.
        #expect(outcomes["ok", default: 0] > 1000)
        #expect(outcomes["truncated", default: 0] > 1000)
        #expect(outcomes["malformed", default: 0] > 100)
        #expect(outcomes["not_wav", default: 0] > 1000)
    }

    @Test("PlaybackClientMessage.decode survives 120,000 random and mutated inputs")
    func clientMessageFuzz() {
        var generator = SeededGenerator(seed: 0x4A53_4F4E)
        let seeds = [
            #"{"type":"audio","data":"AAEC/w=="}"#, #"{"type":"mark","name":"turn-1 ☃"}"#, #"{"type":"clear"}"#,
            #"{"type":"audio","data":"AAE"}"#, #"[{"type":"clear"}]"#, #"{"type":"mark","name":"\ud83d\ude00"}"#,
        ]
        let alphabet = Array(#"{}[]":,\ -+.eE0123456789tfnulrasypdcmAZaz=/\u"#.unicodeScalars)
        var decoded = 0, rejected = 0
        for iteration in 0..<120_000 {
            let text: String
            if iteration % 3 == 0 {
                let length = Int.random(in: 0...40, using: &generator)
                text = String(String.UnicodeScalarView((0..<length).map { _ in alphabet.randomElement(using: &generator)! }))
            } else {
                let mutated = generator.mutate(Array(seeds[iteration % seeds.count].utf8), edits: 2)
                text = String(decoding: mutated, as: UTF8.self)
            }
            do {
                let message = try PlaybackClientMessage.decode(text)
                if case .mark(let name) = message { #expect(name.utf8.count <= 256) }
                decoded += 1
            } catch {
                rejected += 1
            }
        }
        #expect(decoded > 1000 && rejected > 10_000)
    }
}
