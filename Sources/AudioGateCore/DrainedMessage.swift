/// `{"type":"drained"}`: this stream's queue ran empty.
public struct DrainedMessage: ServerMessage {
    /// `"drained"`.
    public static let type = "drained"

    /// Creates the message.
    public init() {}

    enum CodingKeys: String, CodingKey { case type }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
    }

    /// Compact JSON.
    public func json() -> String { "{\"type\":\"drained\"}" }
}
