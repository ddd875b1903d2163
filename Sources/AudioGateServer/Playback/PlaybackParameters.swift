import AudioGateCore
import Hummingbird

/// The query parameters of `POST /v1/playback` and the `/v1/playback` WebSocket, validated once.
public struct PlaybackParameters: Sendable, Equatable {
    /// Client sample rates accepted for raw PCM (WAV files carry their own, same bounds).
    public static let rates = 8000...192_000
    /// Sample formats accepted for raw PCM.
    public static let formats: [SampleFormat] = [.s16le, .f32le, .mulaw, .alaw]
    /// Longest stream name.
    public static let maximumStreamNameLength = 64
    /// The query keys `init(query:)` reads; the playback routes declare these.
    static let queryKeys = ["rate", "channels", "format", "stream", "wait", "role"]

    /// Format of raw PCM sent by the client.
    public var format: AudioFormat
    /// The stream the audio is queued on.
    public var stream: String
    /// `wait=true`: answer a POST only after its audio was heard.
    public var wait: Bool
    /// `format=mp3|ogg|flac|webm`: the audio is compressed in this container.
    public var container: AudioContainer?
    /// `role=voice|music`: music is lowered while a voice stream plays.
    public var role: PlaybackRole = .voice
    /// The query set `rate`, `channels` or a PCM `format`: the body is raw PCM, never sniffed.
    public var rawFormatGiven = false

    /// Defaults: 24 kHz mono s16le on stream `default`, no wait.
    public init(format: AudioFormat = AudioFormat(rate: 24000, channels: 1, sampleFormat: .s16le), stream: String = "default", wait: Bool = false) {
        self.format = format
        self.stream = stream
        self.wait = wait
    }

    /// Parses and validates `rate`, `channels`, `format`, `stream`, `wait` and `role`; other keys are ignored.
    public init(query: [String: String]) throws(PlaybackError) {
        self.init()
        if let text = query["rate"] {
            guard let rate = Int(text), Self.rates.contains(rate) else {
                throw PlaybackError.parameter("rate", "an integer sample rate in Hz from 8000 to 192000")
            }
            format.rate = rate
        }
        if let text = query["channels"] {
            guard let channels = Int(text), ClientFormats.channels.contains(channels) else {
                throw PlaybackError.parameter("channels", "1 or 2")
            }
            format.channels = channels
        }
        if let text = query["format"], let container = AudioContainer(rawValue: text.lowercased()) {
            self.container = container
        } else if let text = query["format"] {
            guard let sampleFormat = SampleFormat(rawValue: text), Self.formats.contains(sampleFormat) else {
                throw PlaybackError.parameter("format", "s16le, f32le, mulaw, alaw, mp3, ogg, flac or webm")
            }
            format.sampleFormat = sampleFormat
        }
        if format.sampleFormat.isG711 {
            // G.711 is 8 kHz mono: the rate may be left out, nothing else is taken.
            if query["rate"] == nil { format.rate = 8000 }
            guard format.rate == 8000 else {
                throw PlaybackError.parameter("rate", "8000 (or left out) with format=\(format.sampleFormat.rawValue): G.711 is 8 kHz")
            }
            guard format.channels == 1 else {
                throw PlaybackError.parameter("channels", "1 with format=\(format.sampleFormat.rawValue): G.711 is mono")
            }
        }
        rawFormatGiven = query["rate"] != nil || query["channels"] != nil || (query["format"] != nil && container == nil)
        if let text = query["stream"] {
            stream = try Self.validatedStreamName(text)
        }
        if let text = query["wait"] {
            switch text.lowercased() {
            case "true", "1", "yes": wait = true
            case "false", "0", "no": wait = false
            default: throw PlaybackError.parameter("wait", "true or false")
            }
        }
        if let text = query["role"] {
            guard let role = PlaybackRole(rawValue: text.lowercased()) else {
                throw PlaybackError.parameter("role", "voice or music")
            }
            self.role = role
        }
    }

    /// Parses the query of a request.
    public init(request: Request) throws(PlaybackError) {
        try self.init(query: request.uri.queryDictionary)
    }

    /// A stream name: 1-64 characters of `A-Z a-z 0-9 . _ -`.
    public static func validatedStreamName(_ name: String) throws(PlaybackError) -> String {
        let valid =
            !name.isEmpty && name.utf8.count <= maximumStreamNameLength
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
        guard valid else { throw PlaybackError.parameter("stream", "1-64 characters of A-Z, a-z, 0-9, '.', '_' and '-'") }
        return name
    }
}
