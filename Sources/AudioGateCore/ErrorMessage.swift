/// `{"type":"error","code","message"}`: a problem with this socket's input or stream.
public struct ErrorMessage: ServerMessage {
    /// `"error"`.
    public static let type = "error"
    /// snake_case error code.
    public var code: String
    /// Human-readable sentence.
    public var message: String

    /// Creates the message.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    /// Creates the message from a protocol decoding error.
    public init(_ error: ProtocolError) {
        self.init(code: error.code.rawValue, message: error.message)
    }

    enum CodingKeys: String, CodingKey { case type, code, message }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        code = try container.decode(String.self, forKey: .code)
        message = try container.decode(String.self, forKey: .message)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(code, forKey: .code)
        try container.encode(message, forKey: .message)
    }

    /// Compact JSON.
    public func json() -> String {
        "{\"type\":\"error\",\"code\":\(JSONText.quoted(code)),\"message\":\(JSONText.quoted(message))}"
    }
}
