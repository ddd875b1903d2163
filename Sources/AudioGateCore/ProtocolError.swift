/// Why a client's WebSocket text message was rejected.
public struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Machine-readable reason; raw values are the snake_case codes sent in `error` messages.
    public enum Code: String, Sendable, Equatable, CaseIterable {
        /// Not parseable JSON.
        case invalidJSON = "invalid_json"
        /// JSON, but not an object.
        case notAnObject = "not_an_object"
        /// No `type`, or a `type` this endpoint does not know.
        case unknownType = "unknown_type"
        /// A required field is absent.
        case missingField = "missing_field"
        /// A field has the wrong JSON type or an invalid value.
        case invalidField = "invalid_field"
        /// `data` is not valid standard base64.
        case invalidBase64 = "invalid_base64"
        /// A mark name longer than `PlaybackClientMessage.maximumNameBytes`.
        case nameTooLong = "name_too_long"
    }

    /// Machine-readable reason.
    public let code: Code
    /// Human-readable sentence.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
