import AudioGateCore

/// Why a capture request was refused; the HTTP layer answers it, a WebSocket sends it as an `error`.
public typealias CaptureError = CodedError<CaptureErrorCode>

/// What went wrong.
public enum CaptureErrorCode: String, ParameterCode {
    /// A query parameter is not one the capture takes, or does not fit the others.
    case badParameter = "bad_parameter"
    /// The server already has its most capture clients (`--max-capture-clients`).
    case tooManyClients = "too_many_clients"
    /// The encoder for a compressed stream could not be opened.
    case encoderFailed = "encoder_failed"

    public var reason: FailureReason {
        switch self {
        case .badParameter: .badParameter
        case .tooManyClients: .tooManyRequests
        case .encoderFailed: .internalError
        }
    }
}
