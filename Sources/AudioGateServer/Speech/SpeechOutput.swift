import Synchronization

/// Speech samples collected on the speech thread for the request that plays them.
final class SpeechOutput: Sendable {
    private struct State {
        var bytes: [UInt8] = []
        var error: SpeechError?
    }

    private let state = Mutex(State())
    private let cancelled = Atomic<Bool>(false)

    /// Appends s16le samples (called by espeak-ng's callback).
    func append(_ samples: UnsafeBufferPointer<Int16>) {
        state.withLock { state in
            #if _endian(little)
            state.bytes.append(contentsOf: UnsafeRawBufferPointer(samples))
            #else
            for sample in samples {
                withUnsafeBytes(of: sample.littleEndian) { state.bytes.append(contentsOf: $0) }
            }
            #endif
        }
    }

    /// Synthesis failed.
    func fail(_ error: SpeechError) {
        state.withLock { $0.error = error }
    }

    /// The samples, or the error when synthesis failed before giving any.
    func result() throws(SpeechError) -> [UInt8] {
        try state.withLock { state throws(SpeechError) in
            if let error = state.error, state.bytes.isEmpty { throw error }
            return state.bytes
        }
    }

    /// The request went away: synthesis stops at its next callback.
    func cancel() { cancelled.store(true, ordering: .relaxed) }

    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }
}
