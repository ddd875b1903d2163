import NIOCore

/// One chunk every member of a lane sends: a framed binary WebSocket message and its capture times.
struct SharedChunk: Sendable {
    /// The binary frame header followed by the chunk's bytes (never written to once shared).
    var frame: ByteBuffer
    /// Monotonic ns capture time of the chunk's first frame.
    var start: UInt64
    /// When the period completing the chunk was read from the device.
    var ready: UInt64
}
