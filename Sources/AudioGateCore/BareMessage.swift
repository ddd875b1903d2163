/// A server message that is its `type` alone (`{"type":"drained"}`): the coding and the JSON
/// written once for all of them.
public protocol BareMessage: ServerMessage {
    init()
}

private enum BareMessageKeys: String, CodingKey { case type }

extension BareMessage {
    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: BareMessageKeys.self)
        try checkType(container, BareMessageKeys.type, Self.type)
        self.init()
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: BareMessageKeys.self)
        try container.encode(Self.type, forKey: .type)
    }

    /// Compact JSON.
    public func json() -> String { "{\"type\":\(JSONText.quoted(Self.type))}" }
}
