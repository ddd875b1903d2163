import AudioGateCore
import CFFmpeg
import NIOCore

/// Turns a music server's chunks (snapserver's, Sendspin's) into interleaved 16-bit PCM: PCM as it comes, FLAC, Vorbis (in Ogg)
/// and Opus through libavcodec (`DecoderHandle`). One decoder per codec header; not thread-safe.
final class SnapcastDecoder {
    /// The codec names snapserver sends.
    static let codecs = ["pcm", "flac", "ogg", "opus"]
    /// Most frames one chunk may decode to (a second at 192 kHz): a chunk is normally 20 ms.
    static let maximumChunkFrames = 192_000

    /// The codec name from the header.
    let codec: String
    /// Rate and channels of the decoded audio (always 16-bit).
    private(set) var format: AudioFormat

    private enum Kind {
        case pcm(SampleFormat)
        case libav(DecoderHandle, PacketHandle, FrameHandle)
    }

    private let kind: Kind
    private var ogg: SnapcastOggPackets?
    /// The decoded samples of the chunk being decoded.
    private var output: [Int16] = []
    private var outputCount = 0
    private var floats: [Float] = []
    private var packetBytes: [UInt8] = []

    /// A decoder for `header`; throws `.badCodecHeader` when the codec is unknown or its header does not parse.
    convenience init(header: SnapcastCodecHeader) throws(SnapcastError) {
        switch header.codec {
        case "pcm":
            let wav: WAVHeader
            do throws(WAVError) {
                wav = try WAVHeader.parse(header.payload)
            } catch {
                throw SnapcastError(.badCodecHeader, "the pcm header is not a RIFF WAVE header: \(error.message)")
            }
            try self.init(codec: "pcm", rate: wav.format.rate, channels: wav.format.channels, pcm: wav.format.sampleFormat)
        case "flac":
            try self.init(codec: "flac", rate: 0, channels: 0, extradata: header.payload)
        case "ogg":
            var packets = SnapcastOggPackets()
            var headers: [[UInt8]] = []
            try withSnapcastBytes(header.payload) { bytes throws(SnapcastError) in
                try packets.packets(in: bytes) { packet throws(SnapcastError) in
                    guard headers.count < 3 else { throw SnapcastError(.badCodecHeader, "more than three Vorbis header packets") }
                    headers.append(Array(packet))
                }
            }
            guard headers.count == 3, headers[0].count >= 30, headers[0][0] == 1, headers[0][1...6].elementsEqual("vorbis".utf8)
            else { throw SnapcastError(.badCodecHeader, "the ogg header does not hold the three Vorbis header packets") }
            try self.init(codec: "ogg", rate: 0, channels: 0, extradata: SnapcastDecoder.xiphLaced(headers))
        case "opus":
            guard header.payload.count >= 12 else { throw SnapcastError(.badCodecHeader, "the opus header is shorter than 12 bytes") }
            let bytes = header.payload
            func le(_ at: Int, _ count: Int) -> Int { (0..<count).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
            guard le(0, 4) == 0x4F50_5553 else { throw SnapcastError(.badCodecHeader, "the opus header lacks its OPUS marker") }
            try self.init(codec: "opus", rate: le(4, 4), channels: le(10, 2))
        default:
            throw SnapcastError(.badCodecHeader, "unknown codec '\(header.codec.prefix(32))': pcm, flac, ogg and opus are played")
        }
    }

    /// A decoder for chunks of `codec` whose format is known: `pcm` in `sampleFormat` at `rate` and
    /// `channels`; `flac` (extradata `fLaC` and STREAMINFO) and `ogg` (Vorbis, extradata its header
    /// packets Xiph-laced), whose rate and channels come from the extradata; `opus` packets at
    /// `rate` and `channels`. Throws `.badCodecHeader` for a codec or format that is not played.
    init(codec: String, rate: Int, channels: Int, pcm sampleFormat: SampleFormat = .s16le, extradata: [UInt8] = [])
        throws(SnapcastError)
    {
        CodecLibrary.setUp()
        self.codec = codec
        switch codec {
        case "pcm":
            guard StreamingDecoder.channels.contains(channels), StreamingDecoder.rates.contains(rate) else {
                throw SnapcastError(.badCodecHeader, "pcm with \(channels) channels at \(rate) Hz")
            }
            format = AudioFormat(rate: rate, channels: channels, sampleFormat: .s16le)
            kind = .pcm(sampleFormat)
        case "flac":
            guard extradata.count >= 42, extradata.starts(with: Array("fLaC".utf8)) else {
                throw SnapcastError(.badCodecHeader, "the flac header does not start with fLaC and a STREAMINFO block")
            }
            kind = try Self.open(AV_CODEC_ID_FLAC, extradata: extradata, rate: 0, channels: 0)
            format = AudioFormat(rate: 0, channels: 0, sampleFormat: .s16le)
        case "ogg":
            kind = try Self.open(AV_CODEC_ID_VORBIS, extradata: extradata, rate: 0, channels: 0)
            format = AudioFormat(rate: 0, channels: 0, sampleFormat: .s16le)
            ogg = SnapcastOggPackets()
        case "opus":
            guard [8000, 12000, 16000, 24000, 48000].contains(rate), (1...2).contains(channels) else {
                throw SnapcastError(.badCodecHeader, "opus with \(channels) channels at \(rate) Hz")
            }
            // libavcodec's Opus decoder always gives 48 kHz.
            kind = try Self.open(AV_CODEC_ID_OPUS, extradata: [], rate: 48000, channels: channels)
            format = AudioFormat(rate: 48000, channels: channels, sampleFormat: .s16le)
        default:
            throw SnapcastError(.badCodecHeader, "unknown codec '\(codec.prefix(32))': pcm, flac, ogg and opus are played")
        }
        if case .libav(let decoder, _, _) = kind, format.rate == 0 {
            // FLAC and Vorbis learn rate and channels from their header packets.
            let rate = Int(decoder.context.pointee.sample_rate)
            let channels = Int(decoder.context.pointee.ch_layout.nb_channels)
            guard StreamingDecoder.rates.contains(rate), StreamingDecoder.channels.contains(channels) else {
                throw SnapcastError(.badCodecHeader, "\(codec) with \(channels) channels at \(rate) Hz")
            }
            format = AudioFormat(rate: rate, channels: channels, sampleFormat: .s16le)
        }
    }

    /// Decodes one chunk; `body` gets its interleaved samples (empty when the codec is still filling its pipeline).
    func decode<T>(_ payload: ByteBuffer, _ body: (UnsafeBufferPointer<Int16>) -> T) throws(SnapcastError) -> T {
        let result = payload.withUnsafeReadableBytes { bytes in
            Result<T, SnapcastError> { () throws(SnapcastError) in try decode(bytes: bytes, body) }
        }
        return try result.get()
    }

    /// `decode(_:_:)` over bytes in memory.
    func decode<T>(bytes: UnsafeRawBufferPointer, _ body: (UnsafeBufferPointer<Int16>) -> T) throws(SnapcastError) -> T {
        outputCount = 0
        try decodeChunk(bytes)
        return output.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[0..<outputCount])) }
    }

    private func decodeChunk(_ bytes: UnsafeRawBufferPointer) throws(SnapcastError) {
        switch kind {
        case .pcm(let sampleFormat):
            try appendPCM(bytes, format: sampleFormat)
        case .libav(let decoder, let packet, let frame):
            if var ogg {
                defer { self.ogg = ogg }
                try ogg.packets(in: bytes) { data throws(SnapcastError) in
                    try decodePacket(data, decoder: decoder, packet: packet, frame: frame)
                }
            } else {
                // FLAC chunks may hold several frames: libavcodec consumes a packet frame by frame.
                try decodePacket(bytes, decoder: decoder, packet: packet, frame: frame)
            }
        }
    }

    private func decodePacket(
        _ bytes: UnsafeRawBufferPointer, decoder: DecoderHandle, packet: PacketHandle, frame: FrameHandle
    ) throws(SnapcastError) {
        let codec = codec
        try decoder.decode(
            bytes: bytes, packet: packet, padded: &packetBytes, into: frame,
            failure: { SnapcastError(.badChunk, "\(codec): \($0.message)") }
        ) { decoded throws(SnapcastError) in
            try append(decoded)
        }
    }

    /// Appends a decoded frame as interleaved 16-bit samples.
    private func append(_ decoded: DecodedFrame) throws(SnapcastError) {
        let frames = decoded.frames
        let channels = decoded.channels
        guard channels == format.channels, decoded.rate == format.rate else {
            throw SnapcastError(.badChunk, "\(codec) changed to \(channels) channels at \(decoded.rate) Hz mid-stream")
        }
        guard let data = decoded.frame.pointee.extended_data, let first = data[0] else {
            throw SnapcastError(.badChunk, "a decoded frame without data")
        }
        let count = frames * channels
        try reserve(count)
        let sampleFormat = decoded.sampleFormat
        if sampleFormat == AV_SAMPLE_FMT_S16.rawValue || sampleFormat == AV_SAMPLE_FMT_S16P.rawValue {
            output.withUnsafeMutableBufferPointer { out in
                let target = out.baseAddress! + outputCount
                if sampleFormat == AV_SAMPLE_FMT_S16.rawValue {
                    // FLAC at 16 bits, the common case: already what the stream takes.
                    target.update(from: UnsafeRawPointer(first).assumingMemoryBound(to: Int16.self), count: count)
                } else {
                    for channel in 0..<channels {
                        let plane = UnsafeRawPointer(data[channel]!).assumingMemoryBound(to: Int16.self)
                        for index in 0..<frames { target[index * channels + channel] = plane[index] }
                    }
                }
            }
        } else {
            do throws(CodecError) {
                _ = try decoded.interleave(into: &floats)
            } catch {
                throw SnapcastError(.badChunk, "\(codec): \(error.message)")
            }
            encodeFloats(count)
        }
        outputCount += count
    }

    private func appendPCM(_ bytes: UnsafeRawBufferPointer, format sampleFormat: SampleFormat) throws(SnapcastError) {
        let count = bytes.count / sampleFormat.bytesPerSample
        guard count % format.channels == 0 else { throw SnapcastError(.badChunk, "a pcm chunk of partial frames") }
        try reserve(count)
        if sampleFormat == .s16le {
            output.withUnsafeMutableBytes { out in
                UnsafeMutableRawBufferPointer(rebasing: out[0..<(count * 2)]).copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<(count * 2)]))
            }
        } else {
            if floats.count < count { floats = [Float](repeating: 0, count: count) }
            _ = floats.withUnsafeMutableBufferPointer { SampleConversion.decode(bytes, format: sampleFormat, into: $0) }
            encodeFloats(count)
        }
        outputCount += count
    }

    /// Converts `count` floats at the start of `floats` to 16-bit samples after those already decoded.
    private func encodeFloats(_ count: Int) {
        let start = outputCount
        floats.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBytes { out in
                _ = SampleConversion.encode(
                    UnsafeBufferPointer(rebasing: source[0..<count]), format: .s16le,
                    into: UnsafeMutableRawBufferPointer(rebasing: out[(start * 2)...]))
            }
        }
    }

    private func reserve(_ count: Int) throws(SnapcastError) {
        let needed = outputCount + count
        guard needed <= Self.maximumChunkFrames * format.channels else {
            throw SnapcastError(.badChunk, "a chunk decodes to more than \(Self.maximumChunkFrames) frames")
        }
        if output.count < needed { output += [Int16](repeating: 0, count: needed - output.count) }
    }

    /// Opens a libavcodec decoder for `id` with `extradata` (the codec's header packets).
    private static func open(_ id: AVCodecID, extradata: [UInt8], rate: Int, channels: Int) throws(SnapcastError) -> Kind {
        do throws(CodecError) {
            let decoder = try DecoderHandle(codec: id, rate: rate, channels: channels, extradata: extradata)
            return .libav(decoder, try PacketHandle(), try FrameHandle())
        } catch {
            throw SnapcastError(.badCodecHeader, error.message)
        }
    }

    /// Vorbis header packets as libavcodec's extradata: a count, Xiph-laced sizes, the packets.
    static func xiphLaced(_ packets: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(packets.count - 1)]
        for packet in packets.dropLast() {
            bytes += [UInt8](repeating: 255, count: packet.count / 255) + [UInt8(packet.count % 255)]
        }
        return packets.reduce(into: bytes) { $0 += $1 }
    }
}
