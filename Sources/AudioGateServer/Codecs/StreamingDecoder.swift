import CFFmpeg

/// Decodes one compressed upload from a `ByteQueue` to interleaved float PCM, frame by frame, so
/// playback starts with the first decoded frame. Blocking: run it on its own thread.
final class StreamingDecoder {
    /// Where decoded audio goes: interleaved samples, rate and channel count; throw to stop.
    typealias Sink = (UnsafeBufferPointer<Float>, Int, Int) throws -> Void

    /// How decoding ended.
    struct Outcome: Sendable {
        /// Frames handed to the sink (at the codec's rate).
        var frames = 0
        /// Milliseconds decoded.
        var milliseconds = 0.0
        /// The codec's rate and channel count of the last frame.
        var rate = 0
        var channels = 0
        /// Why decoding stopped before the end of the input, if it did.
        var error: CodecError?
    }

    /// Consecutive undecodable packets after which the input counts as corrupt.
    static let maximumConsecutiveErrors = 32
    /// Channel counts and rates passed on to the resampler.
    static let channels = 1...8
    static let rates = 8000...192_000

    private let container: AudioContainer
    private let queue: ByteQueue
    private var interleaved: [Float] = []

    init(container: AudioContainer, queue: ByteQueue) {
        self.container = container
        self.queue = queue
    }

    /// Decodes until the input ends, the sink throws, or an error; never throws itself.
    func run(sink: Sink) -> Outcome {
        var outcome = Outcome()
        do throws(CodecError) {
            try decode(sink: sink, outcome: &outcome)
        } catch {
            outcome.error = error
        }
        queue.closeReader()
        return outcome
    }

    private func decode(sink: Sink, outcome: inout Outcome) throws(CodecError) {
        let demuxer = try DemuxerHandle(container: container, source: queue)
        let (index, parameters) = try demuxer.audioStream()
        let decoder = try DecoderHandle(parameters: parameters)
        let packet = try PacketHandle()
        let frame = try FrameHandle()
        var consecutiveErrors = 0
        while try demuxer.read(into: packet) {
            defer { packet.unref() }
            guard packet.packet.pointee.stream_index == index else { continue }
            do throws(CodecError) {
                try decoder.send(packet)
                consecutiveErrors = 0
            } catch where error.code == .corrupt {
                // One damaged packet is skipped, as players do; a run of them means the input is not audio.
                consecutiveErrors += 1
                if consecutiveErrors >= Self.maximumConsecutiveErrors { throw error }
                continue
            }
            try decoder.drain(into: frame, skippingDamaged: true, failure: { $0 }) { decoded throws(CodecError) in
                try deliver(decoded, sink: sink, outcome: &outcome)
            }
        }
        try decoder.send(nil)
        try decoder.drain(into: frame, skippingDamaged: true, failure: { $0 }) { decoded throws(CodecError) in
            try deliver(decoded, sink: sink, outcome: &outcome)
        }
    }

    /// Interleaves one frame as float and hands it to the sink.
    private func deliver(_ frame: DecodedFrame, sink: Sink, outcome: inout Outcome) throws(CodecError) {
        let count = frame.frames
        let channels = frame.channels
        let rate = frame.rate
        guard Self.channels.contains(channels), Self.rates.contains(rate) else {
            throw CodecError(.unsupported, "\(channels) channels at \(rate) Hz: 1-8 channels at 8000-192000 Hz are played")
        }
        let total = try frame.interleave(into: &interleaved)
        do {
            try interleaved.withUnsafeBufferPointer { try sink(UnsafeBufferPointer(rebasing: $0[0..<total]), rate, channels) }
        } catch {
            throw CodecError(.cancelled, "the upload went away")
        }
        outcome.frames += count
        outcome.milliseconds += Double(count) * 1000 / Double(rate)
        outcome.rate = rate
        outcome.channels = channels
    }
}
