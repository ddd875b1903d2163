/// `{"type":"mark","name"}`: all audio sent before the client's mark has left the speaker.
public struct MarkMessage: ServerMessage {
    /// `"mark"`.
    public static let type = "mark"
    /// The client's mark name, echoed.
    public var name: String

    /// Creates the message.
    public init(name: String) { self.name = name }

    enum CodingKeys: String, CodingKey { case type, name }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        name = try container.decode(String.self, forKey: .name)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(name, forKey: .name)
    }

    /// Compact JSON.
    public func json() -> String { "{\"type\":\"mark\",\"name\":\(JSONText.quoted(name))}" }
}
