/// `{"type":"overrun","dropped_ms"}`: this client fell behind and lost its oldest audio.
public struct OverrunMessage: ServerMessage {
    /// `"overrun"`.
    public static let type = "overrun"
    /// Milliseconds of audio dropped.
    public var droppedMs: Int

    /// Creates the message.
    public init(droppedMs: Int) { self.droppedMs = droppedMs }

    enum CodingKeys: String, CodingKey { case type, droppedMs = "dropped_ms" }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        droppedMs = try container.decode(Int.self, forKey: .droppedMs)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(droppedMs, forKey: .droppedMs)
    }

    /// Compact JSON.
    public func json() -> String { "{\"type\":\"overrun\",\"dropped_ms\":\(droppedMs)}" }
}
