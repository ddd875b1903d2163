import Synchronization

/// Speech samples handed from the synthesizer thread to the request that plays them.
final class SpeechOutput: Sendable {
    private struct State {
        var bytes: [UInt8] = []
        var finished = false
        var error: SpeechError?
    }

    private let state = Mutex(State())
    private let cancelled = Atomic<Bool>(false)

    /// Appends s16le samples (called by espeak-ng's callback).
    func append(_ samples: UnsafeBufferPointer<Int16>) {
        state.withLock { state in
            state.bytes.reserveCapacity(state.bytes.count + samples.count * 2)
            for sample in samples {
                let value = UInt16(bitPattern: sample.littleEndian)
                state.bytes.append(UInt8(value & 0xFF))
                state.bytes.append(UInt8(value >> 8))
            }
        }
    }

    /// Synthesis ended (with an error if it failed).
    func finish(error: SpeechError? = nil) {
        state.withLock { state in
            state.finished = true
            state.error = error
        }
    }

    /// Takes what arrived so far; `finished` once nothing more will come.
    func take() -> (bytes: [UInt8], finished: Bool, error: SpeechError?) {
        state.withLock { state in
            let bytes = state.bytes
            state.bytes.removeAll(keepingCapacity: true)
            return (bytes, state.finished, state.error)
        }
    }

    /// The request went away: synthesis stops at its next callback.
    func cancel() { cancelled.store(true, ordering: .relaxed) }

    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }
}
