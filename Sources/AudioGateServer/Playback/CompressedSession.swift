import AudioGateCore

/// One compressed file arriving over a playback WebSocket: its byte queue and the decoder thread
/// playing it. A mark or the end of the socket ends the file; a clear abandons it.
struct CompressedSession {
    let container: AudioContainer
    let queue: ByteQueue
    let decoding: Task<StreamingDecoder.Outcome, Never>

    init(container: AudioContainer, stream: PlaybackStream, mixFormat: @escaping @Sendable () -> AudioFormat) {
        self.container = container
        let queue = ByteQueue()
        self.queue = queue
        let start = MonotonicClock.nowNanoseconds()
        decoding = Task {
            await CompressedPlayback.decode(
                container: container, queue: queue, stream: stream, mixFormat: mixFormat, startNanoseconds: start)
        }
    }

    /// Hands bytes to the decoder (waiting while its queue is full); false once the decoder stopped.
    func write(_ bytes: [UInt8]) async throws -> Bool {
        guard !queue.isReaderGone else { return false }
        try await queue.write(bytes)
        return true
    }

    /// The file is complete: waits until everything in it was decoded and queued.
    func finish() async -> StreamingDecoder.Outcome {
        queue.finish()
        return await decoding.value
    }

    /// Drops the file: the decoder stops at once.
    func cancel() async {
        queue.cancel()
        _ = await decoding.value
    }

    /// The error event for an outcome, if decoding stopped early.
    func errorEvent(_ outcome: StreamingDecoder.Outcome) -> PlaybackEvent? {
        guard let error = outcome.error, error.code != .cancelled else { return nil }
        let api = APIError(codec: error, container: container)
        let message = outcome.frames > 0 ? "\(api.message) (stopped after \(Int(outcome.milliseconds.rounded())) ms)" : api.message
        return .error(code: api.code.rawValue, message: message)
    }
}
