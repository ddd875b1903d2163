import AudioGateCore

/// Why a connection to a snapserver was closed: bad input from the server or a failure of ours.
public typealias SnapcastError = CodedError<SnapcastErrorCode>

/// What went wrong.
public enum SnapcastErrorCode: String, ErrorCode {
    /// A message type this client does not know.
    case unknownMessage = "unknown_message"
    /// A message larger than `SnapcastFrameDecoder.maximumMessageBytes`.
    case messageTooLarge = "message_too_large"
    /// A message whose fields do not add up (a length past its end, JSON that does not parse).
    case malformedMessage = "malformed_message"
    /// A number outside its documented range (`SnapcastServerSettings.bufferMsRange`, ...), or a
    /// chunk time that does not fit the clock arithmetic.
    case outOfRange = "out_of_range"
    /// A codec header that names an unknown codec or does not parse.
    case badCodecHeader = "bad_codec_header"
    /// A chunk that does not decode.
    case badChunk = "bad_chunk"
    /// The server sent an Error message (e.g. authentication required).
    case serverError = "server_error"
    /// The server stopped answering Time requests.
    case timeout
}
