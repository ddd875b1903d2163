import AudioGateCore

/// Runs a `StreamingDecoder` on its own thread (never an event loop or the device thread),
/// feeding what it decodes into a playback stream through `ingest`.
enum CompressedPlayback {
    /// Stack for a decoder thread: libav's decoders keep some tables on the stack.
    static let stackSize = 2 * 1024 * 1024

    /// Decodes `queue` into `ingest` and finishes the ingest; returns when the input ended, failed
    /// or was cancelled (by `queue.cancel()`, or by a clear when the ingest ends at one). `slot`
    /// is given back once the thread has ended.
    static func decode(
        container: AudioContainer, queue: ByteQueue, ingest: PlaybackIngest, startNanoseconds: UInt64, slot: DecoderSlot
    ) async -> StreamingDecoder.Outcome {
        let outcome = OneShot<StreamingDecoder.Outcome>()
        let thread = WorkerThread(name: "ag-decode", stackSize: stackSize) {
            let decoder = StreamingDecoder(container: container, queue: queue)
            var probed = false
            outcome.fulfill(
                decoder.run { samples, rate, channels in
                    if !probed {
                        probed = true
                        ingest.probeLatency(startNanoseconds: startNanoseconds)
                    }
                    let queued = try ingest.writeBlocking(
                        samples, rate: rate, channels: channels, wakeup: queue.readerWakeup,
                        isCancelled: { queue.isCancelled })
                    if !queued { throw CancellationError() }
                })
        }
        await thread.join()
        slot.release()
        // Set before the thread's body returned.
        let result = outcome.value!
        // A file that played to its end (or to a decode error) hands over the resampler's tail.
        if result.frames > 0, result.error?.code != .cancelled { ingest.finish() }
        return result
    }
}
