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

    fileprivate func giveBack() {
        inUse.wrappingSubtract(1, ordering: .relaxed)
    }

    /// The error for a file refused because every slot is taken.
    var refusal: APIError {
        APIError(.tooManyDecoders, "\(limit) compressed files are being decoded (--max-decoders); send PCM or try again shortly")
    }
}

/// One decoder thread's place, given back once: by `release` after the thread was joined, or
/// when it is dropped without a thread having started.
final class DecoderSlot: Sendable {
    private let slots: DecoderSlots
    private let released = Atomic<Bool>(false)

    fileprivate init(slots: DecoderSlots) {
        self.slots = slots
    }

    func release() {
        guard !released.exchange(true, ordering: .relaxed) else { return }
        slots.giveBack()
    }

    deinit { release() }
}
