#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

import AudioGateCore

/// Why a recording request was refused or writing a recording failed; for a failed recording the
/// code and message are what `failure` shows.
public struct RecordingError: ResponseError, Equatable, CustomStringConvertible {
    /// Machine-readable reasons; the raw value is the `code` a recording's `failure` shows.
    public enum Code: String, Sendable, Codable {
        /// The file system is full (ENOSPC or EDQUOT).
        case noSpace = "no_space"
        /// `--max-disk-mb` is reached and no finished recording is left to remove.
        case diskLimit = "disk_limit"
        /// Any other file-system error.
        case io = "io_error"
        /// The FLAC or Opus encoder failed.
        case encoder = "encoder_error"
        /// A request body that is not a recording's settings.
        case badBody = "bad_body"
        /// A bad id, file extension or range.
        case badParameter = "bad_parameter"
        /// No such recording, segment or file.
        case notFound = "not_found"
        /// The server already runs its most recordings (`--max-recordings`).
        case tooManyRecordings = "too_many_recordings"
        /// The recordings folder cannot be used, or the server is shutting down.
        case unavailable
    }

    public let code: Code
    public let message: String
    /// The `errno` of the system call that failed, if one did.
    let systemError: Int32?

    public init(_ code: Code, _ message: String) {
        self.init(code, message, systemError: nil)
    }

    init(_ code: Code, _ message: String, systemError: Int32?) {
        self.code = code
        self.message = message
        self.systemError = systemError
    }

    public var description: String { "\(code.rawValue): \(message)" }

    public var reason: FailureReason {
        switch code {
        case .noSpace, .diskLimit: .insufficientStorage
        case .io, .encoder: .internalError
        case .badBody: .badBody
        case .badParameter: .badParameter
        case .notFound: .notFound
        case .tooManyRecordings: .tooManyRequests
        case .unavailable: .unavailable
        }
    }

    /// A bad request parameter, naming it and what is allowed.
    static func parameter(_ name: String, _ allowed: String) -> RecordingError {
        RecordingError(.badParameter, FailureReason.parameterMessage(name, allowed))
    }

    /// The error for a failed system call, from `errno`.
    static func system(_ call: String, path: String, errno number: Int32 = errno) -> RecordingError {
        let text = String(cString: strerror(number))
        let code: Code = number == ENOSPC || number == EDQUOT ? .noSpace : .io
        return RecordingError(code, "\(call) \(path): \(text)", systemError: number)
    }
}

/// Runs a system call, retrying on EINTR; a negative result becomes a `RecordingError`.
@discardableResult
func systemCheck<T: BinaryInteger>(_ call: String, path: String, _ body: () -> T) throws(RecordingError) -> T {
    while true {
        let result = body()
        if result >= 0 { return result }
        let number = errno
        if number == EINTR { continue }
        throw RecordingError.system(call, path: path, errno: number)
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` for bodies that throw `RecordingError` (the standard one loses the type).
    func withRecordingBytes<T>(_ body: (UnsafeRawBufferPointer) throws(RecordingError) -> T) throws(RecordingError) -> T {
        let result: Result<T, RecordingError> = withUnsafeBytes { raw in
            do throws(RecordingError) { return .success(try body(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
