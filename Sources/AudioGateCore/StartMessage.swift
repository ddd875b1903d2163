/// `{"type":"start","rate","channels","format","chunk_ms"}`: first message on a capture socket.
public struct StartMessage: ServerMessage {
    /// `"start"`.
    public static let type = "start"
    /// Frames per second of the stream.
    public var rate: Int
    /// Channels of the stream.
    public var channels: Int
    /// Sample format of the stream.
    public var format: SampleFormat
    /// Milliseconds of audio per chunk.
    public var chunkMs: Int
    /// The capture processing in effect (`aec`, `ns`, `agc`, `vad`).
    public var processing: VoiceProcessing?

    /// Creates the message.
    public init(rate: Int, channels: Int, format: SampleFormat, chunkMs: Int, processing: VoiceProcessing? = nil) {
        self.rate = rate
        self.channels = channels
        self.format = format
        self.chunkMs = chunkMs
        self.processing = processing
    }

    enum CodingKeys: String, CodingKey { case type, rate, channels, format, chunkMs = "chunk_ms", processing }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        rate = try container.decode(Int.self, forKey: .rate)
        channels = try container.decode(Int.self, forKey: .channels)
        format = try container.decode(SampleFormat.self, forKey: .format)
        chunkMs = try container.decode(Int.self, forKey: .chunkMs)
        processing = try container.decodeIfPresent(VoiceProcessing.self, forKey: .processing)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(rate, forKey: .rate)
        try container.encode(channels, forKey: .channels)
        try container.encode(format, forKey: .format)
        try container.encode(chunkMs, forKey: .chunkMs)
        try container.encodeIfPresent(processing, forKey: .processing)
    }

    /// Compact JSON.
    public func json() -> String {
        let head = "{\"type\":\"start\",\"rate\":\(rate),\"channels\":\(channels),\"format\":\"\(format.rawValue)\",\"chunk_ms\":\(chunkMs)"
        guard let processing else { return head + "}" }
        return head + ",\"processing\":" + processing.json() + "}"
    }
}
