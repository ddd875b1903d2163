import AudioGateCore
import AudioGateTestSupport
import Testing

@Suite("WAV header")
struct WAVHeaderTests {
    static let formats: [AudioFormat] = [SampleFormat.u8, .s16le, .s24le3, .s32le, .f32le].flatMap { sample in
        [AudioFormat(rate: 8000, channels: 1, sampleFormat: sample), AudioFormat(rate: 192_000, channels: 2, sampleFormat: sample)]
    }

    func code(_ bytes: [UInt8]) -> WAVError.Code? {
        do {
            _ = try WAVHeader.parse(bytes)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("encode then parse gives the same header", arguments: formats)
    func roundTrip(format: AudioFormat) throws {
        let encoded = WAVHeader.encode(format: format, dataByteCount: 4800)
        #expect(encoded.count == 44)
        let header = try WAVHeader.parse(encoded)
        #expect(header == WAVHeader(format: format, dataByteCount: 4800, dataOffset: 44))
    }

    @Test func streamingHeader() throws {
        let format = AudioFormat(rate: 16000, channels: 1, sampleFormat: .s16le)
        let encoded = WAVHeader.encode(format: format, dataByteCount: nil)
        #expect(Array(encoded[4..<8]) == [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(Array(encoded[40..<44]) == [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(try WAVHeader.parse(encoded).dataByteCount == nil)
        // Some streaming writers put 0 instead.
        var zeroed = encoded
        zeroed.replaceSubrange(40..<44, with: [0, 0, 0, 0])
        #expect(try WAVHeader.parse(zeroed).dataByteCount == nil)
    }

    @Test func s24leIsWrittenAsPacked() throws {
        let header = try WAVHeader.parse(WAVHeader.encode(format: AudioFormat(rate: 48000, channels: 2, sampleFormat: .s24le), dataByteCount: 60))
        #expect(header.format.sampleFormat == .s24le3)
    }

    @Test func canonicalBytes() {
        let bytes = WAVHeader.encode(format: AudioFormat(rate: 16000, channels: 1, sampleFormat: .s16le), dataByteCount: 32000)
        let expected: [UInt8] = Array("RIFF".utf8) + WAVBuilder.le32(32036) + Array("WAVEfmt ".utf8)
            + WAVBuilder.le32(16) + [1, 0, 1, 0] + WAVBuilder.le32(16000) + WAVBuilder.le32(32000) + [2, 0, 16, 0]
            + Array("data".utf8) + WAVBuilder.le32(32000)
        #expect(bytes == expected)
        let float = WAVHeader.encode(format: AudioFormat(rate: 16000, channels: 1, sampleFormat: .f32le), dataByteCount: 0)
        #expect(float[20] == 3)
    }

    @Test func skipsChunksWithPadding() throws {
        var builder = WAVBuilder()
        builder.add("LIST", Array("INFOISFT".utf8) + [3, 0, 0, 0, 0x41, 0x42, 0x43])  // odd size: padded
        builder.add("fmt ", WAVBuilder.fmt(tag: 1, channels: 2, rate: 44100, bits: 16))
        builder.add("fact", WAVBuilder.le32(10))
        builder.add("data", [UInt8](repeating: 0, count: 40))
        let bytes = builder.bytes()
        let header = try WAVHeader.parse(bytes)
        #expect(header.format == AudioFormat(rate: 44100, channels: 2, sampleFormat: .s16le))
        #expect(header.dataByteCount == 40)
        #expect(header.dataOffset == bytes.count - 40)
    }

    @Test func extensiblePCMAndFloat() throws {
        var pcm = WAVBuilder()
        pcm.add("fmt ", WAVBuilder.extensible(subformat: 1, channels: 2, rate: 96000, bits: 24))
        pcm.add("data", [0, 0, 0, 0, 0, 0])
        #expect(try WAVHeader.parse(pcm.bytes()).format == AudioFormat(rate: 96000, channels: 2, sampleFormat: .s24le3))

        var float = WAVBuilder()
        float.add("fmt ", WAVBuilder.extensible(subformat: 3, channels: 1, rate: 48000, bits: 32))
        float.add("data", [0, 0, 0, 0])
        #expect(try WAVHeader.parse(float.bytes()).format == AudioFormat(rate: 48000, channels: 1, sampleFormat: .f32le))

        var plainFloat = WAVBuilder()
        plainFloat.add("fmt ", WAVBuilder.fmt(tag: 3, channels: 2, rate: 22050, bits: 32) + [0, 0])  // cbSize present
        plainFloat.add("data", [])
        let header = try WAVHeader.parse(plainFloat.bytes())
        #expect(header.format.sampleFormat == .f32le && header.dataByteCount == nil)

        var adpcmExtensible = WAVBuilder()
        adpcmExtensible.add("fmt ", WAVBuilder.extensible(subformat: 2, channels: 1, rate: 48000, bits: 16))
        adpcmExtensible.add("data", [0, 0])
        #expect(code(adpcmExtensible.bytes()) == .unsupportedEncoding)
    }

    @Test func rejectsWithTheRightCode() {
        func file(_ fmt: [UInt8]) -> [UInt8] {
            var builder = WAVBuilder()
            builder.add("fmt ", fmt)
            builder.add("data", [0, 0, 0, 0])
            return builder.bytes()
        }
        #expect(code(file(WAVBuilder.fmt(tag: 2, channels: 1, rate: 8000, bits: 4, blockAlign: 256))) == .unsupportedEncoding)
        // G.711 (tags 7 and 6) is read as one byte a sample; any other width is not G.711.
        #expect(code(file(WAVBuilder.fmt(tag: 7, channels: 1, rate: 8000, bits: 8))) == nil)
        #expect(code(file(WAVBuilder.fmt(tag: 6, channels: 1, rate: 8000, bits: 16))) == .unsupportedBitDepth)
        #expect(code(file(WAVBuilder.fmt(tag: 0x55, channels: 2, rate: 44100, bits: 0, blockAlign: 1))) == .unsupportedEncoding)
        #expect(code(file(WAVBuilder.fmt(tag: 1, channels: 3, rate: 48000, bits: 16))) == .unsupportedChannels)
        #expect(code(file(WAVBuilder.fmt(tag: 1, channels: 0, rate: 48000, bits: 16))) == .unsupportedChannels)
        #expect(code(file(WAVBuilder.fmt(tag: 1, channels: 1, rate: 4000, bits: 16))) == .unsupportedRate)
        #expect(code(file(WAVBuilder.fmt(tag: 1, channels: 1, rate: 384_000, bits: 16))) == .unsupportedRate)
        #expect(code(file(WAVBuilder.fmt(tag: 1, channels: 1, rate: 48000, bits: 12, blockAlign: 2))) == .unsupportedBitDepth)
        #expect(code(file(WAVBuilder.fmt(tag: 3, channels: 1, rate: 48000, bits: 64))) == .unsupportedBitDepth)
        #expect(code(file(WAVBuilder.fmt(tag: 1, channels: 2, rate: 48000, bits: 16, blockAlign: 2))) == .malformed)
        #expect(code(file(Array(WAVBuilder.fmt(tag: 1, channels: 1, rate: 48000, bits: 16).prefix(14)))) == .malformed)

        var dataFirst = WAVBuilder()
        dataFirst.add("data", [0, 0])
        dataFirst.add("fmt ", WAVBuilder.fmt(tag: 1, channels: 1, rate: 48000, bits: 16))
        #expect(code(dataFirst.bytes()) == .malformed)

        var huge = WAVBuilder()
        huge.add("fmt ", WAVBuilder.fmt(tag: 1, channels: 1, rate: 48000, bits: 16))
        let hugeBytes = huge.bytes() + Array("junk".utf8) + WAVBuilder.le32(0xFFFF_FFF0)
        #expect(code(hugeBytes) == .malformed)

        #expect(code(Array("RIFX".utf8) + [UInt8](repeating: 0, count: 40)) == .notWAV)
        #expect(code(Array("RIFF\u{0}\u{0}\u{0}\u{0}AVI LIST".utf8)) == .notWAV)
        #expect(code(Array("GIF89a".utf8)) == .notWAV)
        #expect(code(Array("RIFX".utf8.prefix(4))) == .notWAV)
    }

    @Test("sizes, rates, channels and bits at the ends of their fields give a typed error or a bounded header")
    func numericExtremes() {
        func fmt(tag: Int = 1, channels: Int = 1, rate: UInt32 = 48000, byteRate: UInt32 = 96000, align: Int = 2, bits: Int = 16) -> [UInt8] {
            WAVBuilder.le16(tag) + WAVBuilder.le16(channels) + WAVBuilder.le32(rate) + WAVBuilder.le32(byteRate)
                + WAVBuilder.le16(align) + WAVBuilder.le16(bits)
        }
        func file(_ fmt: [UInt8], dataSize: UInt32? = nil) -> [UInt8] {
            var builder = WAVBuilder()
            builder.add("fmt ", fmt)
            builder.add("data", [0, 0, 0, 0])
            return builder.bytes(dataSize: dataSize)
        }
        for rate: UInt32 in [0, 7999, 192_001, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF] {
            #expect(code(file(fmt(rate: rate, byteRate: 0xFFFF_FFFF))) == .unsupportedRate, "rate \(rate)")
        }
        for channels in [0, 3, 0x7FFF, 0xFFFF] {
            #expect(code(file(fmt(channels: channels, align: 0xFFFF))) == .unsupportedChannels, "channels \(channels)")
        }
        for bits in [0, 1, 0x7FFF, 0xFFFF] {
            #expect(code(file(fmt(bits: bits))) == .unsupportedBitDepth, "bits \(bits)")
        }
        #expect(code(file(fmt(align: 0xFFFF))) == .malformed)
        #expect(code(file(fmt(tag: 0xFFFF))) == .unsupportedEncoding)
        // A data size of 4 GB - 1 means "unknown" (streaming); any other is the size, whatever it is.
        #expect((try? WAVHeader.parse(file(fmt(), dataSize: 0xFFFF_FFFF)))?.dataByteCount == nil)
        #expect((try? WAVHeader.parse(file(fmt(), dataSize: 0xFFFF_FFFE)))?.dataByteCount == 0xFFFF_FFFE)
        // Chunk sizes at the end of the field: refused at the search bound, never an offset overflow.
        let head = Array("RIFF".utf8) + WAVBuilder.le32(0xFFFF_FFFF) + Array("WAVE".utf8)
        for size: UInt32 in [0xFFFF_FFFF, 0xFFFF_FFFE, 0x8000_0000, 0x7FFF_FFFF, 0x0010_0000] {
            #expect(code(head + Array("LIST".utf8) + WAVBuilder.le32(size) + [0, 0]) == .malformed, "LIST \(size)")
            #expect(code(head + Array("fmt ".utf8) + WAVBuilder.le32(size) + fmt()) == .malformed, "fmt \(size)")
        }
        // WAVE_FORMAT_EXTENSIBLE with a cbSize of 65535 but 40 bytes: read within the chunk.
        var extensible = WAVBuilder.extensible(subformat: 1, channels: 2, rate: 48000, bits: 16)
        extensible.replaceSubrange(16..<18, with: [0xFF, 0xFF])
        #expect(code(file(extensible)) == nil)
    }

    @Test("every prefix of a valid header is .truncated")
    func truncatedPrefixes() {
        var builder = WAVBuilder()
        builder.add("LIST", [UInt8](repeating: 0x20, count: 31))
        builder.add("fmt ", WAVBuilder.extensible(subformat: 1, channels: 2, rate: 48000, bits: 16))
        builder.add("data", [1, 2, 3, 4])
        let bytes = builder.bytes()
        let headerEnd = bytes.count - 4
        for length in 0..<headerEnd {
            #expect(code(Array(bytes.prefix(length))) == .truncated, "prefix \(length)")
        }
        #expect(code(Array(bytes.prefix(headerEnd))) == nil)
    }

    @Test func dataChunkSearchIsBounded() {
        var builder = WAVBuilder()
        builder.add("fmt ", WAVBuilder.fmt(tag: 1, channels: 1, rate: 48000, bits: 16))
        for _ in 0..<200 { builder.add("pad ", [UInt8](repeating: 0, count: 8192)) }
        builder.add("data", [0, 0])
        #expect(code(builder.bytes()) == .malformed)
    }

    @Test func errorCodesAreSnakeCase() {
        #expect(WAVError.Code.unsupportedEncoding.rawValue == "unsupported_encoding")
        #expect(WAVError(.truncated, "x").description == "truncated: x")
    }
}
