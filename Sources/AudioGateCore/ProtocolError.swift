/// Why a client's WebSocket text message was rejected.
public typealias ProtocolError = CodedError<ProtocolErrorCode>

/// Machine-readable reason; raw values are the snake_case codes sent in `error` messages.
public enum ProtocolErrorCode: String, ErrorCode, CaseIterable {
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
