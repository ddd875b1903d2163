import NIOCore

/// Encoder output that ends at a page, frame or cluster boundary (or is one bare codec packet).
struct EncodedPiece: Sendable {
    /// The bytes, sent as they are; shared, never written to.
    var bytes: ByteBuffer
    /// Frames of audio (at the encoding's rate) the piece completes; 0 for headers and trailers.
    var frames: Int
}
