/// `{"type":"cleared","played_ms","flushed_ms"}`: answer to a client's clear (barge-in).
public struct ClearedMessage: ServerMessage {
    /// `"cleared"`.
    public static let type = "cleared"
    /// Milliseconds of this stream's audio heard so far.
    public var playedMs: Int
    /// Milliseconds of queued audio thrown away.
    public var flushedMs: Int

    /// Creates the message.
    public init(playedMs: Int, flushedMs: Int) {
        self.playedMs = playedMs
        self.flushedMs = flushedMs
    }

    enum CodingKeys: String, CodingKey { case type, playedMs = "played_ms", flushedMs = "flushed_ms" }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        playedMs = try container.decode(Int.self, forKey: .playedMs)
        flushedMs = try container.decode(Int.self, forKey: .flushedMs)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(playedMs, forKey: .playedMs)
        try container.encode(flushedMs, forKey: .flushedMs)
    }

    /// Compact JSON.
    public func json() -> String {
        "{\"type\":\"cleared\",\"played_ms\":\(playedMs),\"flushed_ms\":\(flushedMs)}"
    }
}
