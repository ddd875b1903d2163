import Synchronization

/// Speech samples collected on the speech thread for the request that plays them, at most
/// `maximumBytes` of them: digit strings at a slow rate expand a few thousand characters into an
/// hour of audio, so synthesis stops at the bound instead.
final class SpeechOutput: Sendable {
    private struct State {
        var bytes: [UInt8] = []
        var error: SpeechError?
    }

    /// Most bytes kept; synthesis stops once they are reached.
    let maximumBytes: Int
    private let state = Mutex(State())
    private let cancelled = Atomic<Bool>(false)
    private let full = Atomic<Bool>(false)

    init(maximumBytes: Int) {
        self.maximumBytes = maximumBytes
    }

    /// Appends s16le samples (called by espeak-ng's callback); what goes past `maximumBytes` is
    /// dropped and the output counts as truncated.
    func append(_ samples: UnsafeBufferPointer<Int16>) {
        let reachedBound = state.withLock { state -> Bool in
            let room = (maximumBytes - state.bytes.count) / MemoryLayout<Int16>.size
            let kept = UnsafeBufferPointer(rebasing: samples[..<min(samples.count, max(room, 0))])
            #if _endian(little)
            state.bytes.append(contentsOf: UnsafeRawBufferPointer(kept))
            #else
            for sample in kept {
                withUnsafeBytes(of: sample.littleEndian) { state.bytes.append(contentsOf: $0) }
            }
            #endif
            return kept.count < samples.count
        }
        if reachedBound { full.store(true, ordering: .relaxed) }
    }

    /// Synthesis failed.
    func fail(_ error: SpeechError) {
        state.withLock { $0.error = error }
    }

    /// The samples, and whether synthesis was stopped at `maximumBytes`; or the error when
    /// synthesis failed before giving any.
    func result() throws(SpeechError) -> (bytes: [UInt8], truncated: Bool) {
        let truncated = isFull
        return try state.withLock { state throws(SpeechError) in
            if let error = state.error, state.bytes.isEmpty { throw error }
            return (state.bytes, truncated)
        }
    }

    /// The request went away: synthesis stops at its next callback.
    func cancel() { cancelled.store(true, ordering: .relaxed) }

    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    /// `maximumBytes` were reached: synthesis stops at its next callback.
    var isFull: Bool { full.load(ordering: .relaxed) }
}
