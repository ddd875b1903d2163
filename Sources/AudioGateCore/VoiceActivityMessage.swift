/// `{"type":"vad","state":"speech"|"silence","timestamp_ms"}`: speech started or ended (with `vad=true`).
public struct VoiceActivityMessage: ServerMessage {
    /// `"vad"`.
    public static let type = "vad"

    /// Whether speech started or ended.
    public enum State: String, Sendable, Codable {
        case speech
        case silence
    }

    /// What changed.
    public var state: State
    /// Capture time of the audio where it changed, on `MonotonicClock`, in milliseconds.
    public var timestampMs: Double

    /// Creates the message.
    public init(state: State, timestampMs: Double) {
        self.state = state
        self.timestampMs = timestampMs
    }

    enum CodingKeys: String, CodingKey { case type, state, timestampMs = "timestamp_ms" }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        state = try container.decode(State.self, forKey: .state)
        timestampMs = try container.decode(Double.self, forKey: .timestampMs)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(state, forKey: .state)
        try container.encode(timestampMs, forKey: .timestampMs)
    }

    /// Compact JSON (timestamp to 0.001 ms).
    public func json() -> String {
        "{\"type\":\"vad\",\"state\":\"\(state.rawValue)\",\"timestamp_ms\":\(JSONText.number(timestampMs, decimals: 3))}"
    }
}
