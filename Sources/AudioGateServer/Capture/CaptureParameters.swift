import AudioGateCore

/// The query of `/v1/capture` (WebSocket and HTTP), parsed and validated once for both routes.
///
/// Unknown parameters (e.g. `token`) are ignored; a repeated parameter takes its last value.
public struct CaptureParameters: Sendable, Equatable {
    /// How WebSocket chunks are framed.
    public enum Encoding: String, Sendable, CaseIterable {
        /// One binary frame of raw PCM per chunk.
        case binary
        /// `{"type":"audio","seq","timestamp_ms","data"}` text frames with base64 PCM.
        case json
    }

    /// How the HTTP stream is framed.
    public enum Container: String, Sendable, CaseIterable {
        /// Raw interleaved PCM.
        case raw
        /// A 44-byte WAV header, then PCM.
        case wav
        /// Ogg pages (Opus by default; `codec=vorbis|flac`).
        case ogg
        /// WebM (Opus).
        case webm
        /// Native FLAC.
        case flac
        /// MP3.
        case mp3

        /// The encoder's container, for the compressed ones.
        var encoded: AudioEncoding.Container? {
            switch self {
            case .raw, .wav: nil
            case .ogg: .ogg
            case .webm: .webm
            case .flac: .flac
            case .mp3: .mp3
            }
        }
    }

    /// Longest `seconds` an HTTP capture may ask for (a day).
    public static let maximumSeconds = 86_400.0

    /// The query keys `init(query:)` reads; the route declares these and no others.
    static let queryKeys =
        ["rate", "channels", "format", "container", "seconds", "chunk_ms", "encoding", "levels", "music", "codec", "bitrate"]
        + VoiceProcessing.parameterNames

    /// Rate, channels and sample format the client receives.
    public var format = AudioFormat(rate: 16000, channels: 1, sampleFormat: .s16le)
    /// Milliseconds of audio per chunk.
    public var chunkMilliseconds = 20
    /// WebSocket framing.
    public var encoding = Encoding.binary
    /// Whether the WebSocket also gets `level` events every 50 ms.
    public var levels = false
    /// Whether the WebSocket also gets `music` events: what the music player plays, at once and on each change.
    public var music = false
    /// HTTP framing.
    public var container = Container.raw
    /// HTTP only: stop after this many seconds of audio (nil: until the client goes away).
    public var seconds: Double?
    /// The compressed encoding (HTTP `container=ogg|webm|flac|mp3`, WebSocket `format=opus`), shared
    /// by every client asking for the same one; nil for PCM.
    public var compressed: AudioEncoding?
    /// Echo cancellation, noise suppression, gain and voice detection (`aec`, `ns`, `agc`, `vad`).
    public var processing = VoiceProcessing()

    /// The defaults of the contract (16 kHz mono s16le, 20 ms binary chunks).
    public init() {}

    /// Parses and validates a query; throws a 400 naming the parameter and what is allowed.
    public init(query: [String: String]) throws(CaptureError) {
        if let text = query["rate"] {
            guard let rate = Int(text), ClientFormats.captureRates.contains(rate) else {
                throw .parameter("rate", "one of \(ClientFormats.captureRates.map(String.init).joined(separator: ", "))")
            }
            format.rate = rate
        }
        if let text = query["channels"] {
            guard let channels = Int(text), ClientFormats.channels.contains(channels) else {
                throw .parameter(
                    "channels", "\(ClientFormats.channels.lowerBound) to \(ClientFormats.channels.upperBound)")
            }
            format.channels = channels
        }
        var opus = false
        if query["format"] == "opus" {
            opus = true
        } else if let text = query["format"] {
            guard ClientFormats.formats.contains(text), let sampleFormat = SampleFormat(rawValue: text) else {
                throw .parameter("format", "one of \((ClientFormats.formats + ["opus"]).joined(separator: ", "))")
            }
            format.sampleFormat = sampleFormat
        }
        try checkG711(query: query)
        if let text = query["chunk_ms"] {
            guard let chunk = Int(text), ClientFormats.chunkMilliseconds.contains(chunk) else {
                let range = ClientFormats.chunkMilliseconds
                throw .parameter("chunk_ms", "an integer from \(range.lowerBound) to \(range.upperBound)")
            }
            chunkMilliseconds = chunk
        }
        if let text = query["encoding"] {
            guard let value = Encoding(rawValue: text) else {
                throw .parameter("encoding", "one of \(Encoding.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            encoding = value
        }
        if let text = query["levels"] {
            switch text {
            case "true", "1": levels = true
            case "false", "0": levels = false
            default: throw .parameter("levels", "true or false")
            }
        }
        if let text = query["music"] {
            switch text {
            case "true", "1": music = true
            case "false", "0": music = false
            default: throw .parameter("music", "true or false")
            }
        }
        if let text = query["container"] {
            guard let value = Container(rawValue: text) else {
                throw .parameter("container", "one of \(Container.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            container = value
        }
        if let text = query["seconds"] {
            guard let value = Double(text), value.isFinite, value > 0, value <= Self.maximumSeconds else {
                throw .parameter("seconds", "a number of seconds above 0 and at most \(Int(Self.maximumSeconds))")
            }
            seconds = value
        }
        processing = try VoiceProcessing(query: query, format: format)
        compressed = try Self.compressed(query: query, opus: opus, container: container, format: format, chunk: chunkMilliseconds)
        if compressed != nil, format.sampleFormat.isG711 {
            throw .parameter("format", "\(format.sampleFormat.rawValue) is sent raw or in WAV, not with container=\(container.rawValue)")
        }
    }

    /// G.711 is 8 kHz mono: the rate defaults to 8000 and no other rate or channel count is taken.
    private mutating func checkG711(query: [String: String]) throws(CaptureError) {
        guard format.sampleFormat.isG711 else { return }
        if query["rate"] == nil { format.rate = ClientFormats.g711Rate }
        guard format.rate == ClientFormats.g711Rate else {
            throw .parameter("rate", "8000 (or left out) with format=\(format.sampleFormat.rawValue): G.711 is 8 kHz")
        }
        guard format.channels == 1 else {
            throw .parameter("channels", "1 with format=\(format.sampleFormat.rawValue): G.711 is mono")
        }
    }

    /// Frames per chunk: `chunk_ms` rounded to whole frames (11025 Hz at 10 ms gives 110 frames).
    public var chunkFrames: Int { max(1, format.frames(forMilliseconds: Double(chunkMilliseconds))) }

    /// Bytes per chunk.
    public var chunkBytes: Int { format.bytes(forFrames: chunkFrames) }

    /// Frames an HTTP capture with `seconds` delivers (exactly seconds * rate, rounded to a frame).
    public var totalFrames: Int? {
        seconds.map { Int(($0 * Double(format.rate)).rounded()) }
    }
}
