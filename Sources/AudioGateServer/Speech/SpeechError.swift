import AudioGateCore
import CEspeak

/// Why a text was not spoken: a bad request, or a failure of the synthesizer (the call and
/// espeak-ng's error).
public typealias SpeechError = CodedError<SpeechErrorCode>

/// Why synthesis failed.
public enum SpeechErrorCode: String, ParameterCode {
    /// espeak-ng could not start (its voice data is missing), or the server is shutting down.
    case unavailable
    /// No installed voice has that name.
    case unknownVoice = "unknown_voice"
    /// espeak-ng refused the request.
    case failed
    /// The body is not a text to speak, or the text gave no speech.
    case badBody = "bad_body"
    /// A query parameter that is not allowed.
    case badParameter = "bad_parameter"
    /// The body or the text is over its limit.
    case tooLarge = "too_large"
    /// The synthesizer already has its most texts waiting.
    case busy

    public var reason: FailureReason {
        switch self {
        case .unavailable: .unavailable
        case .unknownVoice, .badBody: .badBody
        case .failed: .internalError
        case .badParameter: .badParameter
        case .tooLarge: .tooLarge
        case .busy: .tooManyRequests
        }
    }
}

extension SpeechError {
    /// No installed voice is called that; the message says where the names are.
    static func unknownVoice(_ message: String) -> SpeechError {
        SpeechError(.unknownVoice, "\(message): GET /v1/voices lists the installed voices")
    }
}

/// Checks an espeak-ng status: anything but `EE_OK` becomes a `SpeechError` naming `call`.
func espeakCheck(_ status: espeak_ERROR, _ call: String, code: SpeechError.Code = .failed) throws(SpeechError) {
    guard status != EE_OK else { return }
    let reason =
        switch status {
        case EE_INTERNAL_ERROR: "internal error"
        case EE_BUFFER_FULL: "buffer full"
        case EE_NOT_FOUND: "not found"
        default: "error \(status.rawValue)"
        }
    if code == .unknownVoice { throw SpeechError.unknownVoice("\(call): \(reason)") }
    throw SpeechError(code, "\(call): \(reason)")
}
