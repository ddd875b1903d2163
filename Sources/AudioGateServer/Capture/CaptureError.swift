import AudioGateCore

/// Why a capture request was refused; the HTTP layer answers it, a WebSocket sends it as an `error`.
public struct CaptureError: ResponseError, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable {
        /// A query parameter is not one the capture takes, or does not fit the others.
        case badParameter = "bad_parameter"
        /// The server already has its most capture clients (`--max-capture-clients`).
        case tooManyClients = "too_many_clients"
        /// The encoder for a compressed stream could not be opened.
        case encoderFailed = "encoder_failed"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var reason: FailureReason {
        switch code {
        case .badParameter: .badParameter
        case .tooManyClients: .tooManyRequests
        case .encoderFailed: .internalError
        }
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// A bad query parameter, naming it and what is allowed.
    static func parameter(_ name: String, _ allowed: String) -> CaptureError {
        CaptureError(.badParameter, FailureReason.parameterMessage(name, allowed))
    }
}
