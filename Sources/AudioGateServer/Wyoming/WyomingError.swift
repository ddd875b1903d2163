import AudioGateCore

/// Why a Wyoming connection was closed.
public typealias WyomingError = CodedError<WyomingErrorCode>

/// What the peer did wrong.
public enum WyomingErrorCode: String, ErrorCode {
    /// No newline within the header limit.
    case headerTooLong = "header_too_long"
    /// The header line is not a JSON object with a string `type`, or a length is not a count.
    case badHeader = "bad_header"
    /// `data_length` beyond the limit.
    case dataTooLong = "data_too_long"
    /// `payload_length` beyond the limit.
    case payloadTooLong = "payload_too_long"
    /// The data bytes are not a JSON object.
    case badData = "bad_data"
    /// An event this service does not take.
    case unexpectedEvent = "unexpected_event"
    /// Audio with a rate, width or channel count that cannot be played.
    case badAudio = "bad_audio"
    /// More `audio-stop`s waiting for `played` than `WyomingLimits.maxPendingPlayed`.
    case tooManyPending = "too_many_pending"
    /// Part of an event, then nothing for the idle timeout while the server waited for the rest.
    case idleTimeout = "idle_timeout"
}
