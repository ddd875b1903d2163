/// The facts a WAV header gives about its audio, and where the sample data starts.
public struct WAVHeader: Sendable, Equatable {
    /// Most bytes searched for the data chunk before giving up (LIST chunks with cover art can be large).
    public static let maximumHeaderSearch = 1 << 20
    /// Size-field value meaning "length unknown" in a streaming file.
    public static let unknownSize: UInt32 = 0xFFFF_FFFF

    /// Sample format (u8, s16le, s24le3, s32le or f32le).
    public var format: AudioFormat
    /// Bytes of sample data, or nil when unknown (a streaming header with size 0 or 0xFFFFFFFF).
    public var dataByteCount: Int?
    /// Offset of the first sample byte from the start of the file.
    public var dataOffset: Int

    /// Creates a header description.
    public init(format: AudioFormat, dataByteCount: Int?, dataOffset: Int) {
        self.format = format
        self.dataByteCount = dataByteCount
        self.dataOffset = dataOffset
    }

    /// Parses a header from the start of a file; throws `.truncated` when more bytes are needed.
    public static func parse(_ bytes: [UInt8]) throws(WAVError) -> WAVHeader {
        let result: Result<WAVHeader, WAVError> = bytes.withUnsafeBytes { raw in
            do throws(WAVError) { return .success(try parse(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Parses a header from the start of a file; throws `.truncated` when more bytes are needed.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(WAVError) -> WAVHeader {
        let riff: [UInt8] = Array("RIFF".utf8)
        let wave: [UInt8] = Array("WAVE".utf8)
        let prefixLength = min(bytes.count, 4)
        for i in 0..<prefixLength where bytes[i] != riff[i] {
            throw WAVError(.notWAV, "the data does not start with RIFF")
        }
        if bytes.count >= 12 {
            for i in 0..<4 where bytes[8 + i] != wave[i] {
                throw WAVError(.notWAV, "the RIFF form type is not WAVE")
            }
        } else {
            if bytes.count > 8 {
                for i in 8..<bytes.count where bytes[i] != wave[i - 8] {
                    throw WAVError(.notWAV, "the RIFF form type is not WAVE")
                }
            }
            throw WAVError(.truncated, "the RIFF header is incomplete")
        }

        var offset = 12
        var format: AudioFormat?
        // Each pass consumes at least 8 bytes, so the search limit bounds the loop.
        while true {
            if offset > maximumHeaderSearch - 8 {
                throw WAVError(.malformed, "no data chunk within the first \(maximumHeaderSearch) bytes")
            }
            guard bytes.count >= offset + 8 else {
                throw WAVError(.truncated, "the header ends before the data chunk")
            }
            let id = readUInt32(bytes, offset)
            let size = Int(readUInt32(bytes, offset + 4))
            let body = offset + 8
            switch id {
            case fourCC("fmt "):
                guard format == nil else { throw WAVError(.malformed, "more than one fmt chunk") }
                guard size >= 16 else { throw WAVError(.malformed, "the fmt chunk is shorter than 16 bytes") }
                guard size <= 4096 else { throw WAVError(.malformed, "the fmt chunk is \(size) bytes long") }
                guard bytes.count >= body + size else {
                    throw WAVError(.truncated, "the fmt chunk is incomplete")
                }
                format = try parseFormat(bytes, body, size)
            case fourCC("data"):
                guard let format else { throw WAVError(.malformed, "the data chunk comes before the fmt chunk") }
                let known = size != 0 && size != Int(unknownSize)
                return WAVHeader(format: format, dataByteCount: known ? size : nil, dataOffset: body)
            default:
                break
            }
            // Chunks are word aligned: an odd size is followed by one pad byte.
            let next = body + size + (size & 1)
            if next > maximumHeaderSearch {
                throw WAVError(.malformed, "a chunk reaches beyond the first \(maximumHeaderSearch) bytes")
            }
            offset = next
        }
    }

    /// The `WAVEFORMATEX` fields, validated.
    private static func parseFormat(
        _ bytes: UnsafeRawBufferPointer, _ body: Int, _ size: Int
    ) throws(WAVError) -> AudioFormat {
        var tag = Int(readUInt16(bytes, body))
        let channels = Int(readUInt16(bytes, body + 2))
        let rate = Int(readUInt32(bytes, body + 4))
        let blockAlign = Int(readUInt16(bytes, body + 12))
        let bits = Int(readUInt16(bytes, body + 14))

        if tag == 0xFFFE {
            guard size >= 40, Int(readUInt16(bytes, body + 16)) >= 22 else {
                throw WAVError(.malformed, "the WAVE_FORMAT_EXTENSIBLE fmt chunk is too short")
            }
            // KSDATAFORMAT_SUBTYPE_*: the first two bytes hold the classic format tag.
            let guidTail: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
            for i in 0..<14 where bytes[body + 26 + i] != guidTail[i] {
                throw WAVError(.unsupportedEncoding, "the extensible subformat is not PCM or IEEE float")
            }
            tag = Int(readUInt16(bytes, body + 24))
        }
        guard tag == 1 || tag == 3 || tag == 6 || tag == 7 else {
            throw WAVError(
                .unsupportedEncoding, "format tag \(tag) is not PCM, IEEE float or G.711 (compressed audio is not supported)")
        }
        guard channels == 1 || channels == 2 else {
            throw WAVError(.unsupportedChannels, "\(channels) channels; only 1 or 2 are supported")
        }
        guard (8000...192_000).contains(rate) else {
            throw WAVError(.unsupportedRate, "sample rate \(rate) Hz is outside 8000...192000")
        }
        let sampleFormat: SampleFormat
        switch (tag, bits) {
        case (1, 8): sampleFormat = .u8
        case (1, 16): sampleFormat = .s16le
        case (1, 24): sampleFormat = .s24le3
        case (1, 32): sampleFormat = .s32le
        case (3, 32): sampleFormat = .f32le
        case (6, 8): sampleFormat = .alaw
        case (7, 8): sampleFormat = .mulaw
        default:
            throw WAVError(.unsupportedBitDepth, "\(bits)-bit \(tag == 3 ? "float" : "integer") samples are not supported")
        }
        guard blockAlign == channels * sampleFormat.bytesPerSample else {
            throw WAVError(.malformed, "block align \(blockAlign) does not match \(channels) channels of \(bits) bits")
        }
        return AudioFormat(rate: rate, channels: channels, sampleFormat: sampleFormat)
    }

    /// A canonical 44-byte header (PCM, IEEE float for f32le, format tags 7 and 6 for μ-law and A-law).
    ///
    /// s24le is described as packed 24-bit (s24le3): WAV has no padded 24-bit layout, so the caller
    /// must write s24le3 samples. A nil length writes 0xFFFFFFFF in both size fields (streaming).
    public static func encode(format: AudioFormat, dataByteCount: Int?) -> [UInt8] {
        let sampleFormat = format.sampleFormat == .s24le ? SampleFormat.s24le3 : format.sampleFormat
        let blockAlign = format.channels * sampleFormat.bytesPerSample
        let riffSize: UInt32
        let dataSize: UInt32
        if let count = dataByteCount, count >= 0, count <= Int(unknownSize) - 36 {
            riffSize = UInt32(36 + count)
            dataSize = UInt32(count)
        } else {
            riffSize = unknownSize
            dataSize = unknownSize
        }
        var header: [UInt8] = []
        header.reserveCapacity(44)
        header += Array("RIFF".utf8)
        append32(&header, riffSize)
        header += Array("WAVEfmt ".utf8)
        append32(&header, 16)
        append16(&header, formatTag(sampleFormat))
        append16(&header, UInt16(truncatingIfNeeded: format.channels))
        append32(&header, UInt32(truncatingIfNeeded: format.rate))
        append32(&header, UInt32(truncatingIfNeeded: format.rate * blockAlign))
        append16(&header, UInt16(truncatingIfNeeded: blockAlign))
        append16(&header, UInt16(truncatingIfNeeded: sampleFormat.bitsPerSample))
        header += Array("data".utf8)
        append32(&header, dataSize)
        return header
    }

    /// WAVE_FORMAT_PCM, _IEEE_FLOAT, _ALAW or _MULAW.
    private static func formatTag(_ format: SampleFormat) -> UInt16 {
        switch format {
        case .f32le: 3
        case .alaw: 6
        case .mulaw: 7
        case .u8, .s16le, .s24le, .s24le3, .s32le: 1
        }
    }

    // MARK: - Little-endian helpers (callers check bounds first)

    private static func readUInt16(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt16 {
        UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    private static func readUInt32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8
            | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }

    private static func fourCC(_ text: StaticString) -> UInt32 {
        let p = text.utf8Start
        return UInt32(p[0]) | UInt32(p[1]) << 8 | UInt32(p[2]) << 16 | UInt32(p[3]) << 24
    }

    private static func append16(_ bytes: inout [UInt8], _ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    }

    private static func append32(_ bytes: inout [UInt8], _ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }
}
