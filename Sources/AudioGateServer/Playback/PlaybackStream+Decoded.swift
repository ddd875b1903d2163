import AudioGateCore
import Foundation

extension PlaybackStream {
    /// Queues decoded float PCM from a decoder thread, sleeping that thread while the queue is
    /// above its limit (the upload behind it then stalls, so TCP slows the sender).
    ///
    /// Throws `CancellationError` when `isCancelled` turns true while waiting.
    func enqueueBlocking(
        _ samples: UnsafeBufferPointer<Float>, rate: Int, channels: Int, mixFormat: @Sendable () -> AudioFormat,
        isCancelled: () -> Bool
    ) throws {
        let format = AudioFormat(rate: rate, channels: channels, sampleFormat: .f32le)
        let frames = samples.count / channels
        let sliceFrames = max(1, Int(Double(rate) * Self.sliceSeconds))
        var offset = 0
        while offset < frames {
            while true {
                if isCancelled() { throw CancellationError() }
                let (queuedFrames, queueRate) = queued
                if queuedFrames < limitSeconds * queueRate { break }
                Thread.sleep(forTimeInterval: 0.02)
            }
            let end = min(frames, offset + sliceFrames)
            let slice = UnsafeBufferPointer(rebasing: samples[(offset * channels)..<(end * channels)])
            push(UnsafeRawBufferPointer(slice), format: format, mix: mixFormat())
            offset = end
        }
    }
}
