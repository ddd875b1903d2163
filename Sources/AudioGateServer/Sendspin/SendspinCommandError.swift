import AudioGateCore

/// Why `POST /v1/sendspin/command` was refused; the code and message are what clients see.
public typealias SendspinCommandError = CodedError<SendspinCommandErrorCode>

/// Machine-readable reasons; the raw value is the `code` clients see.
public enum SendspinCommandErrorCode: String, ResponseCode {
    /// Not JSON, an unknown command, or a value the command does not take.
    case badBody = "bad_body"
    /// The Sendspin player is off (no `--sendspin-server`).
    case notFound = "not_found"
    /// The player is not connected, or the server did not make it a controller.
    case unavailable
    /// The server does not list the command in its `supported_commands`.
    case conflict

    public var reason: FailureReason {
        switch self {
        case .badBody: .badBody
        case .notFound: .notFound
        case .unavailable: .unavailable
        case .conflict: .conflict
        }
    }
}
