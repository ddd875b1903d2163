/// Why a request failed, as clients read it in `error.code`; the HTTP layer picks the status.
public enum FailureReason: String, Sendable, CaseIterable {
    case badParameter = "bad_parameter"
    case badBody = "bad_body"
    case badRequest = "bad_request"
    case unauthorized
    case forbiddenOrigin = "forbidden_origin"
    case notFound = "not_found"
    case methodNotAllowed = "method_not_allowed"
    /// What the request asks does not fit the state of its target (a command the server does not take).
    case conflict
    case tooLarge = "too_large"
    case unsupportedMediaType = "unsupported_media_type"
    case misdirectedRequest = "misdirected_request"
    case tooManyRequests = "too_many_requests"
    case unavailable
    case deviceUnavailable = "device_unavailable"
    case insufficientStorage = "insufficient_storage"
    case internalError = "internal_error"
    /// A playback stream already holds its most pending marks.
    case tooManyMarks = "too_many_marks"
    /// Every decoder thread is busy (`--max-decoders`).
    case tooManyDecoders = "too_many_decoders"
    /// The server holds its most open connections (`--max-connections`).
    case tooManyConnections = "too_many_connections"
}

/// A feature's error that a client hears about: the HTTP layer answers it as `{"error":{"code","message"}}`.
///
/// Each feature throws its own type (capture, playback, recordings, ...); only the HTTP layer turns
/// one into a response, so no feature depends on how requests are answered.
public protocol ResponseError: Error, Sendable {
    /// The failure as clients see it in `error.code`.
    var reason: FailureReason { get }
    /// The human-readable `error.message`.
    var message: String { get }
}

extension FailureReason {
    /// The message of a `badParameter`: the parameter's name and what it may be.
    public static func parameterMessage(_ name: String, _ allowed: String) -> String {
        "invalid '\(name)': \(allowed)"
    }
}
