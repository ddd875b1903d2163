import AudioGateCore
import AudioGateTestSupport
import Testing

@Suite("WAV file")
struct WAVFileTests {
    @Test("write then read round-trips samples", arguments: [SampleFormat.u8, .s16le, .s24le, .s24le3, .s32le, .f32le])
    func roundTrip(sampleFormat: SampleFormat) throws {
        let format = AudioFormat(rate: 24000, channels: 2, sampleFormat: sampleFormat)
        let samples = Signal.duplicate(Signal.sine(frequency: 440, rate: 24000, seconds: 0.1, amplitude: 0.8), channels: 2)
        let file = WAVFile.write(samples: samples, format: format)
        let stored = sampleFormat == .s24le ? SampleFormat.s24le3 : sampleFormat
        #expect(file.count == 44 + samples.count * stored.bytesPerSample)
        let (readFormat, decoded) = try WAVFile.read(file)
        #expect(readFormat == AudioFormat(rate: 24000, channels: 2, sampleFormat: stored))
        #expect(decoded.count == samples.count)
        let worst = zip(samples, decoded).map { abs($0 - $1) }.max() ?? 1
        #expect(worst <= (sampleFormat == .u8 ? 1 / 128 : 1 / 32768))
    }

    @Test func readsStreamingAndShortFiles() throws {
        let format = AudioFormat(rate: 16000, channels: 1, sampleFormat: .s16le)
        let body = SampleConversion.encode([0.5, -0.5, 0.25], format: .s16le)
        let streaming = WAVHeader.encode(format: format, dataByteCount: nil) + body + [0x7F]  // odd trailing byte
        #expect(try WAVFile.read(streaming).samples == [0.5, -0.5, 0.25])
        // Header claims more data than present (the upload was cut): read what is there.
        let short = WAVHeader.encode(format: format, dataByteCount: 1000) + body
        #expect(try WAVFile.read(short).samples == [0.5, -0.5, 0.25])
        // Header claims less: trailing chunks after data are not audio.
        let long = WAVHeader.encode(format: format, dataByteCount: 4) + body + Array("LIST".utf8)
        #expect(try WAVFile.read(long).samples == [0.5, -0.5])
        #expect(throws: WAVError.self) { try WAVFile.read([1, 2, 3]) }
    }
}
