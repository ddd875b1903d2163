import CEspeak

/// A failure of the speech synthesizer: the call and espeak-ng's error.
public struct SpeechError: Error, Sendable, Equatable {
    /// Why synthesis failed.
    public enum Code: String, Sendable {
        /// espeak-ng could not start (its voice data is missing).
        case unavailable
        /// No installed voice has that name.
        case unknownVoice = "unknown_voice"
        /// espeak-ng refused the request.
        case failed
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
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
    throw SpeechError(code, "\(call): \(reason)")
}
