import NIOCore

/// Collects what a muxer writes through its I/O callback until the encoder cuts it into a piece
/// (at a page, frame or cluster boundary).
final class EncodedOutput {
    private(set) var pending: ByteBuffer
    private let allocator = ByteBufferAllocator()

    init() {
        pending = allocator.buffer(capacity: 4096)
    }

    /// Appends bytes from the muxer's write callback.
    func append(_ bytes: UnsafeRawBufferPointer) {
        pending.writeBytes(bytes)
    }

    /// Everything written since the last take (empty when nothing was).
    func take() -> ByteBuffer {
        let piece = pending
        pending = allocator.buffer(capacity: max(4096, piece.readableBytes))
        return piece
    }
}
