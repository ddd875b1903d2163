import AudioGateCore
import Foundation

/// Runs a `StreamingDecoder` on its own thread (never an event loop or the device thread),
/// feeding what it decodes into a playback stream.
enum CompressedPlayback {
    /// Stack for a decoder thread: libav's decoders keep some tables on the stack.
    static let stackSize = 2 * 1024 * 1024

    /// Decodes `queue` into `stream`; returns when the input ended, failed or was cancelled.
    static func decode(
        container: AudioContainer, queue: ByteQueue, stream: PlaybackStream, mixFormat: @escaping @Sendable () -> AudioFormat,
        startNanoseconds: UInt64
    ) async -> StreamingDecoder.Outcome {
        let outcome = OneShot<StreamingDecoder.Outcome>()
        let thread = WorkerThread(name: "ag-decode", stackSize: stackSize) {
            let decoder = StreamingDecoder(container: container, queue: queue)
            var probed = false
            outcome.fulfill(
                decoder.run { samples, rate, channels in
                    if !probed {
                        probed = true
                        stream.addLatencyProbe(position: stream.position, startNanoseconds: startNanoseconds)
                    }
                    try stream.enqueueBlocking(
                        samples, rate: rate, channels: channels, mixFormat: mixFormat, isCancelled: { queue.isCancelled })
                })
        }
        await thread.join()
        // Set before the thread's body returned.
        return outcome.value!
    }
}
