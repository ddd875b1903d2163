import AudioGateCore

/// Why a connection to a Sendspin server was closed: bad input from the server or a failure of ours.
public typealias SendspinError = CodedError<SendspinErrorCode>

/// What went wrong.
public enum SendspinErrorCode: String, ErrorCode {
    /// The Noise handshake failed: a message that does not authenticate, a bad key, the wrong order.
    case handshake
    /// A transport message that does not decrypt (a wrong key, a replay, a corrupted byte).
    case decrypt
    /// A message whose fields do not add up (JSON that does not parse, a chunk header past its end).
    case malformedMessage = "malformed_message"
    /// A message or reassembled fragment over the size limit.
    case messageTooLarge = "message_too_large"
    /// The connection ended without a WebSocket close frame.
    case dropped
    /// More messages than any server playing sends.
    case flood = "message_flood"
    /// A number outside what the clock arithmetic or the format takes.
    case outOfRange = "out_of_range"
    /// A `stream/start` naming a codec or format that is not played, or a codec header that does not parse.
    case badFormat = "bad_format"
    /// A chunk that does not decode.
    case badChunk = "bad_chunk"
    /// The server refused the connection (`server/error`) or closed it in the handshake.
    case refused
    /// The server refused the Noise suite asked for: the next connection asks for the other.
    case unsupportedSuite = "unsupported_suite"
    /// Another server holds the player: this connection was turned away or taken over.
    case anotherServer = "another_server"
    /// The server stopped answering time requests.
    case timeout
    /// The static key could not be read or written.
    case key
    /// A pairing exchange that does not add up: a share that is no point on the curve, a code
    /// that does not match, a failed call of the cryptographic library.
    case pairing
}
