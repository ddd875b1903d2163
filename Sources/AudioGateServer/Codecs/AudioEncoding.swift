/// One encoder setting: what a stream or a file is encoded to. Equal settings share one encoder.
public struct AudioEncoding: Hashable, Sendable {
    /// The codecs the server encodes.
    public enum Codec: String, Sendable, CaseIterable {
        case opus
        case vorbis
        case flac
        case mp3
        case aac
    }

    /// How the encoded packets are framed.
    public enum Container: String, Sendable, CaseIterable {
        /// Ogg pages (Opus, Vorbis or FLAC).
        case ogg
        /// WebM (Matroska) clusters of Opus.
        case webm
        /// Native FLAC frames.
        case flac
        /// MPEG audio frames.
        case mp3
        /// AAC in MP4, index at the front; written to a seekable file only.
        case m4a
        /// No container: each piece is one codec packet (Opus over WebSocket).
        case packets
    }

    public var container: Container
    public var codec: Codec
    public var rate: Int
    public var channels: Int
    /// Bits per second for the lossy codecs; nil takes the codec's default (`defaultBitrate`).
    public var bitrate: Int?
    /// Milliseconds of audio per Opus packet (10, 20, 40 or 60).
    public var packetMilliseconds: Int

    public init(
        container: Container, codec: Codec? = nil, rate: Int, channels: Int, bitrate: Int? = nil,
        packetMilliseconds: Int = 20
    ) {
        self.container = container
        self.codec = codec ?? container.defaultCodec
        self.rate = rate
        self.channels = channels
        self.bitrate = bitrate
        self.packetMilliseconds = packetMilliseconds
    }

    /// Whether the codec drops information (bitrate applies).
    public var isLossy: Bool { codec != .flac }

    /// The bitrate the encoder is opened with (nil for FLAC).
    public var effectiveBitrate: Int? {
        guard isLossy else { return nil }
        return bitrate ?? codec.defaultBitrate(channels: channels)
    }

    /// The media type of the encoded stream or file.
    public var contentType: String {
        switch container {
        case .ogg: codec == .opus ? "audio/ogg; codecs=opus" : codec == .vorbis ? "audio/ogg; codecs=vorbis" : "audio/ogg; codecs=flac"
        case .webm: "audio/webm; codecs=opus"
        case .flac: "audio/flac"
        case .mp3: "audio/mpeg"
        case .m4a: "audio/mp4"
        case .packets: "audio/opus"
        }
    }

    /// Checks codec, container, rate, channels and bitrate together; the error names the
    /// parameter to change (`codec`, `rate`, `channels`, `bitrate`, `chunk_ms`).
    public func validate() throws(EncodingError) {
        guard container.codecs.contains(codec) else {
            throw EncodingError(
                parameter: "codec",
                "\(container.rawValue) carries \(container.codecs.map(\.rawValue).joined(separator: " or ")), not \(codec.rawValue)")
        }
        guard codec.rates.contains(rate) else {
            throw EncodingError(
                parameter: "rate", "\(codec.rawValue) takes \(codec.rates.map(String.init).joined(separator: ", ")) Hz")
        }
        guard codec.channels.contains(channels) else {
            throw EncodingError(
                parameter: "channels", "\(codec.rawValue) takes \(codec.channels.lowerBound) to \(codec.channels.upperBound) channels")
        }
        if let bitrate {
            guard let range = codec.bitrates else {
                throw EncodingError(parameter: "bitrate", "\(codec.rawValue) is lossless and takes no bitrate")
            }
            guard range.contains(bitrate) else {
                throw EncodingError(
                    parameter: "bitrate", "\(codec.rawValue) takes \(range.lowerBound) to \(range.upperBound) bits per second")
            }
        }
        if codec == .opus, !Self.opusPacketMilliseconds.contains(packetMilliseconds) {
            throw EncodingError(parameter: "chunk_ms", "an Opus packet lasts 10, 20, 40 or 60 ms")
        }
    }

    /// The packet lengths Opus takes here.
    public static let opusPacketMilliseconds = [10, 20, 40, 60]
}

extension AudioEncoding.Container {
    /// The codecs the container carries, the default first.
    public var codecs: [AudioEncoding.Codec] {
        switch self {
        case .ogg: [.opus, .vorbis, .flac]
        case .webm: [.opus]
        case .flac: [.flac]
        case .mp3: [.mp3]
        case .m4a: [.aac]
        case .packets: [.opus]
        }
    }

    public var defaultCodec: AudioEncoding.Codec { codecs[0] }

    /// libavformat's muxer; nil for bare packets.
    var muxer: String? {
        switch self {
        case .ogg: "ogg"
        case .webm: "webm"
        case .flac: "flac"
        case .mp3: "mp3"
        case .m4a: "ipod"
        case .packets: nil
        }
    }

    /// The file name extension.
    public var fileExtension: String {
        switch self {
        case .packets: "opus"
        default: rawValue
        }
    }
}

extension AudioEncoding.Codec {
    /// libavcodec's encoder.
    var encoderName: String {
        switch self {
        case .opus: "libopus"
        case .vorbis: "libvorbis"
        case .flac: "flac"
        case .mp3: "libmp3lame"
        case .aac: "aac"
        }
    }

    /// Sample rates the encoder takes (the capture side converts to one of them).
    public var rates: [Int] {
        switch self {
        case .opus: [8000, 12000, 16000, 24000, 48000]
        case .mp3: [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000]
        case .aac: [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000]
        case .vorbis: [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000]
        case .flac: [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000]
        }
    }

    /// The rate of `rates` closest to `rate` at or above it (the highest otherwise).
    public func nearestRate(to rate: Int) -> Int {
        rates.first { $0 >= rate } ?? rates[rates.count - 1]
    }

    public var channels: ClosedRange<Int> {
        switch self {
        case .opus, .mp3: 1...2
        case .vorbis, .flac, .aac: 1...8
        }
    }

    /// Bits per second accepted (nil: lossless).
    public var bitrates: ClosedRange<Int>? {
        switch self {
        case .opus: 6000...510_000
        case .vorbis: 32000...500_000
        case .mp3: 8000...320_000
        case .aac: 8000...512_000
        case .flac: nil
        }
    }

    /// What a lossy codec is opened with when no bitrate is given.
    public func defaultBitrate(channels: Int) -> Int? {
        switch self {
        case .opus: 24000 * channels
        case .vorbis: 64000 * channels
        case .mp3: 64000 * channels
        case .aac: 64000 * channels
        case .flac: nil
        }
    }
}

/// A setting the encoders cannot take, naming the query parameter to change.
public struct EncodingError: Error, Sendable, Equatable {
    public let parameter: String
    public let message: String

    public init(parameter: String, _ message: String) {
        self.parameter = parameter
        self.message = message
    }
}
