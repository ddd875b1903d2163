/// `{"type":"cleared","played_ms","flushed_ms","id"}`: answer to a clear (barge-in); `id` is the clear's own, when it had one.
public struct ClearedMessage: ServerMessage {
    /// `"cleared"`.
    public static let type = "cleared"
    /// Milliseconds of this stream's audio heard so far.
    public var playedMs: Int
    /// Milliseconds of queued audio thrown away.
    public var flushedMs: Int
    /// The id the clear carried, so its sender knows this answer from a clear of another client's.
    public var id: String?

    /// Creates the message.
    public init(playedMs: Int, flushedMs: Int, id: String? = nil) {
        self.playedMs = playedMs
        self.flushedMs = flushedMs
        self.id = id
    }

    enum CodingKeys: String, CodingKey { case type, playedMs = "played_ms", flushedMs = "flushed_ms", id }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        playedMs = try container.decode(Int.self, forKey: .playedMs)
        flushedMs = try container.decode(Int.self, forKey: .flushedMs)
        id = try container.decodeIfPresent(String.self, forKey: .id)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(playedMs, forKey: .playedMs)
        try container.encode(flushedMs, forKey: .flushedMs)
        try container.encodeIfPresent(id, forKey: .id)
    }

    /// Compact JSON.
    public func json() -> String {
        let fields = "\"type\":\"cleared\",\"played_ms\":\(playedMs),\"flushed_ms\":\(flushedMs)"
        guard let id else { return "{\(fields)}" }
        return "{\(fields),\"id\":\(JSONText.quoted(id))}"
    }
}
