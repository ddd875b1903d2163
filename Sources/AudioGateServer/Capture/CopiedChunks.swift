import AudioGateCore

/// A subscriber's queue of chunks it cuts from its group's audio itself: the bytes and the capture
/// times of each chunk, copied into two rings of its own.
struct CopiedChunks {
    /// Capture time bookkeeping of one queued chunk.
    struct Stamp: BitwiseCopyable {
        var start: UInt64
        var ready: UInt64
    }

    let bytes: RingBuffer<UInt8>
    let stamps: RingBuffer<Stamp>
    /// Bytes of the chunk being filled (it sits after the complete chunks in `bytes`).
    var openFill = 0
    var openStart: UInt64 = 0

    /// Rings for `chunks` chunks of `chunkBytes` each.
    init(chunks: Int, chunkBytes: Int) {
        bytes = RingBuffer(capacity: chunks * chunkBytes)
        stamps = RingBuffer(capacity: chunks)
    }

    /// Complete chunks queued.
    var count: Int { stamps.count }
}
