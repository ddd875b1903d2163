import AudioGateCore
import AudioGateTestSupport
import Foundation
import Testing

@Suite("G.711")
struct G711Tests {
    /// Every 16-bit value once, little-endian.
    static let everySample: [UInt8] = (Int(Int16.min)...Int(Int16.max)).flatMap { value -> [UInt8] in
        let bits = UInt16(bitPattern: Int16(value))
        return [UInt8(truncatingIfNeeded: bits), UInt8(truncatingIfNeeded: bits >> 8)]
    }

    static func linear(_ format: SampleFormat, _ code: UInt8) -> Int {
        Int(format == .mulaw ? G711.muLawToLinear(code) : G711.aLawToLinear(code))
    }

    static func code(_ format: SampleFormat, _ sample: Int16) -> UInt8 {
        format == .mulaw ? G711.linearToMuLaw(sample) : G711.linearToALaw(sample)
    }

    @Test("encoding every 16-bit sample gives ffmpeg's bytes", arguments: [SampleFormat.mulaw, .alaw])
    func encodeMatchesFFmpeg(format: SampleFormat) throws {
        let codec = format == .mulaw ? "pcm_mulaw" : "pcm_alaw"
        let reference = try FFmpegTool.convert(
            Self.everySample,
            arguments: ["-f", "s16le", "-ar", "8000", "-ac", "1", "-i", "INPUT", "-c:a", codec, "-f", format.rawValue, "OUTPUT"])
        #expect(reference.count == 65536)
        let ours = (Int(Int16.min)...Int(Int16.max)).map { Self.code(format, Int16($0)) }
        let mismatches = zip(ours, reference).enumerated().filter { $0.element.0 != $0.element.1 }
        #expect(mismatches.isEmpty, "\(mismatches.count) of 65536 differ, first at \(mismatches.first.map { $0.offset - 32768 } ?? 0)")

        // The Float path (the one capture uses) agrees with the integer tables sample for sample.
        let floats = (Int(Int16.min)...Int(Int16.max)).map { Float($0) / 32768 }
        let floatPath = SampleConversion.encode(floats, format: format)
        let agrees = floatPath.count == ours.count && zip(floatPath, ours).allSatisfy { $0 == $1 }
        #expect(agrees)
    }

    @Test("decoding every code gives ffmpeg's samples", arguments: [SampleFormat.mulaw, .alaw])
    func decodeMatchesFFmpeg(format: SampleFormat) throws {
        let codes = (0...255).map { UInt8($0) }
        let codec = format == .mulaw ? "pcm_mulaw" : "pcm_alaw"
        let reference = try FFmpegTool.convert(
            codes, arguments: ["-f", format.rawValue, "-c:a", codec, "-ar", "8000", "-ac", "1", "-i", "INPUT", "-c:a", "pcm_s16le", "-f", "s16le", "OUTPUT"])
        let referenceSamples = stride(from: 0, to: reference.count, by: 2).map {
            Int(Int16(bitPattern: UInt16(reference[$0]) | UInt16(reference[$0 + 1]) << 8))
        }
        let sameAsFFmpeg = referenceSamples.count == 256 && referenceSamples.elementsEqual(codes.map { Self.linear(format, $0) })
        #expect(sameAsFFmpeg)
        let floats = SampleConversion.decode(codes, format: format)
        let floatsAgree = floats.elementsEqual(codes.map { Float(Self.linear(format, $0)) / 32768 })
        #expect(floatsAgree)
    }

    @Test("every sample comes back as the nearest level, within half the top segment's step", arguments: [SampleFormat.mulaw, .alaw])
    func roundTripError(format: SampleFormat) {
        let levels = Set((0...255).map { Self.linear(format, UInt8($0)) }).sorted()
        // μ-law has 255 distinct levels (two codes for 0), A-law 256.
        #expect(levels.count == (format == .mulaw ? 255 : 256))
        let top = levels.last!
        var worstExcess = 0
        var worstInRange = 0
        for value in Int(Int16.min)...Int(Int16.max) {
            let back = Self.linear(format, Self.code(format, Int16(value)))
            let error = abs(back - value)
            // Nearest level by binary search.
            var low = 0
            var high = levels.count - 1
            while high - low > 1 {
                let middle = (low + high) / 2
                if levels[middle] <= value { low = middle } else { high = middle }
            }
            let nearest = min(abs(levels[low] - value), abs(levels[high] - value))
            // The tables index 14 bits (steps of 4) and place each midpoint to the nearest step, so a
            // sample near a midpoint may take the other level: at most 7 further than the nearest.
            worstExcess = max(worstExcess, error - nearest)
            if abs(value) <= top { worstInRange = max(worstInRange, error) }
        }
        #expect(worstExcess <= 7, "a sample came back \(worstExcess) further than the nearest level")
        // The top segment's step is 1024: half of it, plus those 7.
        #expect(worstInRange <= 519, "worst in-range error \(worstInRange)")
    }

    @Test("a -6 dBFS tone keeps G.711's signal-to-noise ratio", arguments: [SampleFormat.mulaw, .alaw])
    func toneSignalToNoise(format: SampleFormat) {
        let samples = (0..<8000).map { Float(0.5 * sin(2 * Double.pi * 1000 * Double($0) / 8000 + 0.1)) }
        let decoded = SampleConversion.decode(SampleConversion.encode(samples, format: format), format: format)
        let signal = samples.reduce(0) { $0 + Double($1 * $1) }
        let noise = zip(samples, decoded).reduce(0) { $0 + Double(($1.0 - $1.1) * ($1.0 - $1.1)) }
        let snr = 10 * log10(signal / noise)
        // G.711's companding keeps about 38 dB over a wide range of levels (ITU-T G.712 asks 35 dB or more).
        #expect(snr > 35, "SNR \(snr) dB")
    }

    @Test("WAV headers carry format tags 7 and 6, and ffprobe reads them", arguments: [SampleFormat.mulaw, .alaw])
    func wavHeader(format: SampleFormat) throws {
        let audioFormat = AudioFormat(rate: 8000, channels: 1, sampleFormat: format)
        let header = WAVHeader.encode(format: audioFormat, dataByteCount: 8000)
        #expect(header.count == 44)
        #expect(header[20] == (format == .mulaw ? 7 : 6) && header[21] == 0 && header[34] == 8)
        #expect(try WAVHeader.parse(header) == WAVHeader(format: audioFormat, dataByteCount: 8000, dataOffset: 44))

        let samples = (0..<8000).map { Float(0.5 * sin(2 * Double.pi * 440 * Double($0) / 8000)) }
        let file = WAVFile.write(samples: samples, format: audioFormat)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("audiogate-g711-\(getpid())-\(UUID().uuidString).wav").path
        try Data(file).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let stream = try FFmpegTool.probeStream(path: path)
        #expect(stream["codec_name"] as? String == (format == .mulaw ? "pcm_mulaw" : "pcm_alaw"))
        let decoded = try FFmpegTool.decode(path)
        #expect(decoded.rate == 8000 && decoded.channels == 1 && decoded.samples.count == 8000)
        let sameSamples = decoded.samples.elementsEqual(SampleConversion.decode(Array(file[44...]), format: format))
        #expect(sameSamples)
    }
}
