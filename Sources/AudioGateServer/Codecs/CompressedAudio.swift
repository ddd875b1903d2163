/// Decoding of a whole in-memory file with the decoder uploads use (fuzzing, benchmarks).
public enum CompressedAudio {
    /// What a decode produced.
    public struct Result: Sendable {
        /// Frames decoded, at `rate`.
        public var frames: Int
        /// The codec's rate and channel count.
        public var rate: Int
        public var channels: Int
        /// Why decoding stopped early, if it did.
        public var error: CodecError?
    }

    /// Decodes `bytes` as `container` on the calling thread (blocking), discarding the samples.
    public static func decode(_ bytes: [UInt8], container: AudioContainer) -> Result {
        let queue = ByteQueue(limit: max(bytes.count, 1))
        _ = queue.offer(bytes)
        queue.finish()
        let outcome = StreamingDecoder(container: container, queue: queue).run { _, _, _ in }
        return Result(frames: outcome.frames, rate: outcome.rate, channels: outcome.channels, error: outcome.error)
    }
}
