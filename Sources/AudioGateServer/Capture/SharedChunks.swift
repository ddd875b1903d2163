import NIOCore

/// A lane member's queue: references to complete chunks framed once and shared with the rest of
/// its lane, oldest first. It never copies audio, and its drain touches no rings.
struct SharedChunks {
    var chunks: CircularBuffer<SharedChunk>

    /// Room for `capacity` chunks before the buffer grows.
    init(capacity: Int) {
        chunks = CircularBuffer(initialCapacity: capacity)
    }

    /// Complete chunks queued.
    var count: Int { chunks.count }
}
