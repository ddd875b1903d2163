/// `{"type":"device","state"}`: the capture device was lost or restored.
public struct DeviceMessage: ServerMessage {
    /// `"device"`.
    public static let type = "device"
    /// Device states a client is told about.
    public enum State: String, Sendable, Codable, Equatable {
        /// The device disappeared; the server keeps reopening it.
        case lost
        /// The device is back and audio flows again.
        case restored
    }
    /// The new state.
    public var state: State

    /// Creates the message.
    public init(state: State) { self.state = state }

    enum CodingKeys: String, CodingKey { case type, state }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        state = try container.decode(State.self, forKey: .state)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(state, forKey: .state)
    }

    /// Compact JSON.
    public func json() -> String { "{\"type\":\"device\",\"state\":\"\(state.rawValue)\"}" }
}
