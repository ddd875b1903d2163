import AudioGateCore

/// Why playback refused a request; the code and message are what clients see in `error`.
public typealias PlaybackError = CodedError<PlaybackErrorCode>

/// Machine-readable reasons; the raw value is the `code` clients see.
public enum PlaybackErrorCode: String, ParameterCode {
    case badParameter = "bad_parameter"
    case badBody = "bad_body"
    case tooLarge = "too_large"
    case unsupportedMediaType = "unsupported_media_type"
    /// `maxPlaybackStreams` streams are in use.
    case tooManyRequests = "too_many_requests"
    /// A stream already holds its most pending marks.
    case tooManyMarks = "too_many_marks"
    /// A decoder library failed on its own.
    case internalError = "internal_error"
    /// Every decoder thread is busy (`--max-decoders`).
    case tooManyDecoders = "too_many_decoders"

    public var reason: FailureReason {
        switch self {
        case .badParameter: .badParameter
        case .badBody: .badBody
        case .tooLarge: .tooLarge
        case .unsupportedMediaType: .unsupportedMediaType
        case .tooManyRequests: .tooManyRequests
        case .tooManyMarks: .tooManyMarks
        case .internalError: .internalError
        case .tooManyDecoders: .tooManyDecoders
        }
    }
}

extension PlaybackError {
    /// A decoder's failure on a compressed body in `container`.
    init(codec error: CodecError, container: AudioContainer) {
        switch error.code {
        case .unsupported: self.init(.unsupportedMediaType, error.message)
        case .corrupt, .cancelled: self.init(.badBody, "the body is not a valid \(container.rawValue) file: \(error.message)")
        case .library: self.init(.internalError, error.message)
        case .tooManyDecoders: self.init(.tooManyDecoders, error.message)
        }
    }
}
