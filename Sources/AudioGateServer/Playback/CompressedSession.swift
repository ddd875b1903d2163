import AudioGateCore

/// One compressed file arriving over a playback WebSocket: its byte queue and the decoder thread
/// playing it. A mark or the end of the socket ends the file; a clear abandons it.
final class CompressedSession: Sendable {
    let container: AudioContainer
    let queue: ByteQueue
    /// Set once the decoder thread has stopped.
    let outcome = OneShot<StreamingDecoder.Outcome>()

    /// Starts the decoder thread in `slot`.
    init(container: AudioContainer, stream: PlaybackStream, mixFormat: @escaping @Sendable () -> AudioFormat, slot: DecoderSlot) {
        self.container = container
        let queue = ByteQueue()
        self.queue = queue
        let start = MonotonicClock.nowNanoseconds()
        // The file ends at a clear: the decoder's next slice after one is refused, so nothing of it
        // is heard after the barge-in even before the cancel reaches the thread.
        let ingest = PlaybackIngest.decoded(stream: stream, mixFormat: mixFormat, endsAtClear: true)
        let outcome = outcome
        Task {
            outcome.fulfill(
                await CompressedPlayback.decode(
                    container: container, queue: queue, ingest: ingest, startNanoseconds: start, slot: slot))
        }
    }

    /// The file is complete: the decoder sees its end once it has read everything.
    func finish() {
        queue.finish()
    }

    /// Drops the file: the decoder stops at once.
    func cancel() {
        queue.cancel()
    }

    /// The error event for an outcome, if decoding stopped early.
    func errorEvent(_ outcome: StreamingDecoder.Outcome) -> PlaybackEvent? {
        guard let error = outcome.error, error.code != .cancelled else { return nil }
        let api = PlaybackError(codec: error, container: container)
        let message = outcome.frames > 0 ? "\(api.message) (stopped after \(Int(outcome.milliseconds.rounded())) ms)" : api.message
        return .error(code: api.code.rawValue, message: message)
    }
}
