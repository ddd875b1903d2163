import Synchronization

/// The server-wide count of decoder threads (one per compressed file playing), bounded by
/// `--max-decoders`: a file past the bound is refused before its thread starts, so many uploads
/// (which may all share one stream name) cannot spawn threads without limit.
public final class DecoderSlots: Sendable {
    /// Most decoder threads at once.
    public let limit: Int
    private let inUse = Atomic<Int>(0)

    public init(limit: Int) {
        self.limit = limit
    }

    /// Decoder threads alive (or about to start) now.
    public var count: Int { inUse.load(ordering: .relaxed) }

    /// Takes a slot for one decoder thread; nil when all are taken.
    func reserve() -> DecoderSlot? {
        guard inUse.wrappingAdd(1, ordering: .relaxed).newValue <= limit else {
            inUse.wrappingSubtract(1, ordering: .relaxed)
            return nil
        }
        return DecoderSlot(slots: self)
    }

    /// Called once per slot, by `DecoderSlot.release`.
    func giveBack() {
        inUse.wrappingSubtract(1, ordering: .relaxed)
    }

    /// The error for a file refused because every slot is taken.
    var refusal: CodecError {
        CodecError(.tooManyDecoders, "\(limit) compressed files are being decoded (--max-decoders); send PCM or try again shortly")
    }
}
