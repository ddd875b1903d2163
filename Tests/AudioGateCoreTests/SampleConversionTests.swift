import AudioGateCore
import AudioGateTestSupport
import Foundation
import Testing

@Suite("Sample conversion")
struct SampleConversionTests {
    /// One LSB of each format, the tolerance of a round trip.
    static func lsb(_ format: SampleFormat) -> Float {
        switch format {
        case .u8: 1 / 128
        case .s16le: 1 / 32768
        case .s24le, .s24le3: 1 / 8_388_608
        case .s32le: 1 / 16_777_216  // Float's own precision, not 2^-31.
        case .f32le: 0
        // A companded step, largest in the top segment (1024 of 32768), which also bounds how far
        // full scale sits above the largest code (32124 for μ-law, 32256 for A-law).
        case .mulaw, .alaw: 1024 / 32768
        }
    }

    @Test("decode(encode(x)) is within one LSB", arguments: SampleFormat.allCases)
    func roundTrip(format: SampleFormat) {
        var generator = SeededGenerator(seed: 7)
        var samples: [Float] = (0..<10_000).map { _ in Float.random(in: -1..<1, using: &generator) }
        samples += [0, -1, 0.5, -0.5, 1 / 3, -1 / 3, 0.999]
        let bytes = SampleConversion.encode(samples, format: format)
        #expect(bytes.count == samples.count * format.bytesPerSample)
        let decoded = SampleConversion.decode(bytes, format: format)
        #expect(decoded.count == samples.count)
        let tolerance = max(Self.lsb(format), 1e-7)
        let worst = zip(samples, decoded).map { abs($0 - $1) }.max() ?? 1
        #expect(worst <= tolerance, "worst error \(worst) for \(format)")
    }

    @Test("±1.5 saturate and NaN becomes 0", arguments: SampleFormat.allCases)
    func clamping(format: SampleFormat) {
        let decoded = SampleConversion.decode(
            SampleConversion.encode([1.5, -1.5, .nan, .infinity, -.infinity, 1.0, -1.0], format: format),
            format: format)
        let top = 1 - Self.lsb(format)
        // G.711's largest codes lie a step inside full scale on both sides, and A-law has no 0
        // (its smallest levels are ±8/32768).
        let bottom: Float = format.isG711 ? -top : -1
        let zero: Float = format == .alaw ? 8 / 32768 : 0
        #expect(decoded[0] >= top - 1e-7 && decoded[0] <= 1)
        #expect(decoded[1] >= -1 && decoded[1] <= bottom)
        #expect(abs(decoded[2]) <= zero)
        #expect(decoded[3] >= top - 1e-7)
        #expect(decoded[4] >= -1 && decoded[4] <= bottom)
        #expect(decoded[5] >= top - 1e-7, "+1.0 must saturate, not wrap to -1")
        #expect(decoded[6] >= -1 && decoded[6] <= bottom)
    }

    @Test func s16ExactValues() {
        #expect(SampleConversion.encode([1.5, -1.5, 0, 0.5, 1.0 / 32768], format: .s16le)
                == [0xFF, 0x7F, 0x00, 0x80, 0x00, 0x00, 0x00, 0x40, 0x01, 0x00])
        #expect(SampleConversion.decode([0x00, 0x80, 0xFF, 0xFF, 0xFF, 0x7F], format: .s16le)
                == [-1, -1 / 32768, 32767 / 32768])
    }

    @Test func s16RoundsToNearest() {
        // 0.4 and 0.6 LSB must round to 0 and 1 respectively, not truncate.
        let bytes = SampleConversion.encode([0.4 / 32768, 0.6 / 32768, -0.6 / 32768], format: .s16le)
        #expect(bytes == [0, 0, 1, 0, 0xFF, 0xFF])
        // Exact halves round to even, so quantisation stays unbiased.
        let halves = SampleConversion.encode([0.5 / 32768, 1.5 / 32768, -2.5 / 32768], format: .s16le)
        #expect(halves == [0, 0, 2, 0, 0xFE, 0xFF])
    }

    @Test func audioFormatJSONKeys() throws {
        let json = try JSONEncoder().encode(AudioFormat(rate: 16000, channels: 1, sampleFormat: .s16le))
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(object["sample_format"] as? String == "s16le" && object["rate"] as? Int == 16000)
        #expect(try JSONDecoder().decode(AudioFormat.self, from: json) == AudioFormat(rate: 16000, channels: 1, sampleFormat: .s16le))
    }

    @Test func s24SignExtension() {
        // Garbage in the S24_LE container's top byte must be ignored; bit 23 is the sign.
        let bytes: [UInt8] = [0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x80, 0x7F, 0xFF, 0xFF, 0x7F, 0xAB, 0x01, 0x00, 0x00, 0xFF]
        let decoded = SampleConversion.decode(bytes, format: .s24le)
        let expected: [Float] = [-1 / 8_388_608, -1, 8_388_607 / 8_388_608, 1 / 8_388_608]
        #expect(decoded == expected)
        let packed = SampleConversion.decode([0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x80], format: .s24le3)
        let expectedPacked: [Float] = [-1 / 8_388_608, -1]
        #expect(packed == expectedPacked)
        #expect(SampleConversion.encode([-1 / 8_388_608], format: .s24le) == [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(SampleConversion.encode([-1 / 8_388_608], format: .s24le3) == [0xFF, 0xFF, 0xFF])
    }

    @Test func u8Midpoint() {
        #expect(SampleConversion.encode([0, -1, 1, -2], format: .u8) == [128, 0, 255, 0])
        #expect(SampleConversion.decode([128, 0, 255], format: .u8) == [0, -1, 127 / 128])
    }

    @Test func s32Extremes() {
        let bytes = SampleConversion.encode([1, -1, 0.5], format: .s32le)
        #expect(bytes == [0xFF, 0xFF, 0xFF, 0x7F, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x40])
    }

    @Test func f32DecodeSanitizesHostileInput() {
        let hostile: [Float] = [.nan, .infinity, -3, 0.25]
        let bytes = hostile.flatMap { value in withUnsafeBytes(of: value.bitPattern.littleEndian) { Array($0) } }
        #expect(SampleConversion.decode(bytes, format: .f32le) == [0, 1, -1, 0.25])
    }

    @Test func partialBuffersAndCounts() {
        // 5 bytes hold two whole s16 samples; a 1-element destination limits the count further.
        let bytes: [UInt8] = [0, 0x40, 0, 0xC0, 0x12]
        #expect(SampleConversion.decode(bytes, format: .s16le) == [0.5, -0.5])
        var one: [Float] = [9]
        let decoded = bytes.withUnsafeBytes { raw in
            one.withUnsafeMutableBufferPointer { SampleConversion.decode(raw, format: .s16le, into: $0) }
        }
        #expect(decoded == 1 && one == [0.5])
        var small = [UInt8](repeating: 0xEE, count: 5)
        let written = [Float](repeating: 0.5, count: 4).withUnsafeBufferPointer { floats in
            small.withUnsafeMutableBytes { SampleConversion.encode(floats, format: .s16le, into: $0) }
        }
        #expect(written == 2 && small == [0, 0x40, 0, 0x40, 0xEE])
        #expect(SampleConversion.decode([], format: .f32le).isEmpty)
    }

    @Test func unalignedSource() {
        let samples: [Float] = [0.25, -0.75, 0.5]
        let bytes = [0xAA] + SampleConversion.encode(samples, format: .f32le)
        var output = [Float](repeating: 0, count: 3)
        let count = bytes.withUnsafeBytes { raw in
            output.withUnsafeMutableBufferPointer {
                SampleConversion.decode(UnsafeRawBufferPointer(rebasing: raw[1...]), format: .f32le, into: $0)
            }
        }
        #expect(count == 3 && output == samples)
    }

    @Test func formatSizes() {
        #expect(SampleFormat.allCases.map(\.bytesPerSample) == [1, 2, 4, 3, 4, 4, 1, 1])
        let format = AudioFormat(rate: 48000, channels: 2, sampleFormat: .s16le)
        #expect(format.bytesPerFrame == 4)
        #expect(format.frames(forMilliseconds: 20) == 960)
        #expect(format.milliseconds(forFrames: 480) == 10)
        #expect(format.bytes(forFrames: 960) == 3840)
        #expect(format.frames(forBytes: 3843) == 960)
        #expect(AudioFormat(rate: 44100, channels: 1, sampleFormat: .f32le).frames(forMilliseconds: 10) == 441)
        #expect(SampleFormat(rawValue: "s24le3") == .s24le3)
    }
}
