import Synchronization

/// One decoder thread's place, given back once: by `release` after the thread was joined, or
/// when it is dropped without a thread having started.
final class DecoderSlot: Sendable {
    private let slots: DecoderSlots
    private let released = Atomic<Bool>(false)

    init(slots: DecoderSlots) {
        self.slots = slots
    }

    /// Gives the place back; later calls do nothing.
    func release() {
        guard !released.exchange(true, ordering: .relaxed) else { return }
        slots.giveBack()
    }

    deinit { release() }
}
