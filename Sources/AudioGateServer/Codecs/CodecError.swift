import AudioGateCore
import CFFmpeg

/// A failure decoding compressed audio: what went wrong, the library call and its message.
public typealias CodecError = CodedError<CodecErrorCode>

/// Why decoding stopped.
public enum CodecErrorCode: String, ResponseCode {
    /// The container or codec is not one the server plays.
    case unsupported
    /// The bytes are not a valid file of the declared kind.
    case corrupt
    /// The sender went away.
    case cancelled
    /// The library failed for another reason (memory, internal).
    case library
    /// Every decoder thread is busy (`--max-decoders`): the file was refused before decoding.
    case tooManyDecoders = "too_many_decoders"

    public var reason: FailureReason {
        switch self {
        case .unsupported: .unsupportedMediaType
        case .corrupt, .cancelled: .badBody
        case .library: .internalError
        case .tooManyDecoders: .tooManyDecoders
        }
    }
}

/// Checks a libav return value: negative values become a `CodecError` naming `call`.
@discardableResult
func avCheck(_ result: Int32, _ call: String) throws(CodecError) -> Int32 {
    guard result < 0 else { return result }
    throw CodecError(avErrorCode(result), "\(call): \(avErrorMessage(result))")
}

/// The code a libav error maps to.
func avErrorCode(_ result: Int32) -> CodecError.Code {
    switch result {
    case audiogate_averror_exit(): .cancelled
    case audiogate_averror_invalid_data(), audiogate_averror_eof(): .corrupt
    case -ENOMEM: .library
    default: .corrupt
    }
}

/// libav's text for an error code.
func avErrorMessage(_ result: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 128)
    if av_strerror(result, &buffer, buffer.count) < 0 { return "error \(result)" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
