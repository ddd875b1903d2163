import AudioGateCore
import AudioGateDevices
import NIOCore
import NIOPosix

/// Converts a recording whose segments are FLAC or Ogg Opus: each segment is decoded by the
/// decoder compressed playback uses (on its own `WorkerThread`, fed the file in blocks read on the
/// thread pool, bounded by its `ByteQueue`), brought to the export's rate, cut or padded with
/// silence to the frames the timeline lists, and encoded into the file at `path`.
enum CompressedExport {
    /// Bytes read from a segment file at a time.
    static let blockBytes = 64 << 10

    static func encode(_ parts: [RecordingExport.Part], format: AudioFormat, encoding: AudioEncoding, path: String) async throws {
        let queues = parts.map { part -> ByteQueue? in
            if case .encoded = part { return ByteQueue() }
            return nil
        }
        let outcome = OneShot<Result<Void, CodecError>>()
        let job = try Transcoder(parts: parts, queues: queues, format: format, encoding: encoding, path: path)
        let thread = WorkerThread(name: "ag-export") {
            outcome.fulfill(job.run())
        }
        do {
            for (part, queue) in zip(parts, queues) {
                guard case .encoded(let file, _, let bytes, _) = part, let queue else { continue }
                let descriptor = try await NIOThreadPool.singleton.runIfActive { try FileDescriptorBox(path: file) }
                var offset = 0
                while offset < bytes, !queue.isReaderGone {
                    let start = offset
                    let count = min(blockBytes, bytes - offset)
                    let block = try await NIOThreadPool.singleton.runIfActive { try descriptor.read(count, at: start) }
                    if block.isEmpty { break }
                    try await queue.write(block)
                    offset += block.count
                }
                queue.finish()
            }
        } catch {
            for queue in queues { queue?.cancel() }
            await thread.join()
            throw error
        }
        let result = await outcome.waitIgnoringCancellation()
        await thread.join()
        try result.get()
    }
}

/// The decoding and encoding of one export, run on its worker thread.
///
/// Unchecked Sendable: built on the request's task, then used only by its worker thread.
private final class Transcoder: @unchecked Sendable {
    let parts: [RecordingExport.Part]
    let queues: [ByteQueue?]
    let format: AudioFormat
    let encoding: AudioEncoding
    let encoder: StreamingEncoder
    private var pieces: [EncodedPiece] = []

    init(parts: [RecordingExport.Part], queues: [ByteQueue?], format: AudioFormat, encoding: AudioEncoding, path: String) throws {
        self.parts = parts
        self.queues = queues
        self.format = format
        self.encoding = encoding
        encoder = try StreamingEncoder(encoding, path: path)
    }

    /// Frames at the encoder's rate that `frames` frames of the recording last.
    func encoderFrames(_ frames: Int) -> Int {
        Int((Double(frames) * Double(encoding.rate) / Double(format.rate)).rounded())
    }

    func run() -> Result<Void, CodecError> {
        do throws(CodecError) {
            for (part, queue) in zip(parts, queues) {
                switch part {
                case .silence(let frames):
                    try silence(encoderFrames(frames))
                case .encoded(_, let frames, _, let container):
                    guard let queue else { continue }
                    try decode(container: container, queue: queue, frames: encoderFrames(frames))
                case .wav:
                    throw CodecError(.library, "a WAV segment in a compressed recording")
                }
            }
            try encoder.finish(into: &pieces)
            return .success(())
        } catch {
            for queue in queues { queue?.closeReader() }
            return .failure(error)
        }
    }

    private func silence(_ frames: Int) throws(CodecError) {
        var left = frames
        let block = [Float](repeating: 0, count: 4096 * encoding.channels)
        while left > 0 {
            let count = min(left, 4096)
            try block.withUnsafeBufferPointer { buffer throws(CodecError) in
                try encoder.encode(UnsafeBufferPointer(rebasing: buffer[0..<(count * encoding.channels)]), into: &pieces)
            }
            pieces.removeAll(keepingCapacity: true)
            left -= count
        }
    }

    /// Decodes one segment into the encoder: exactly `frames` frames (a segment cut by a crash
    /// decodes short and is padded; decoders' extra frames at the end are dropped).
    private func decode(container: AudioContainer, queue: ByteQueue, frames: Int) throws(CodecError) {
        var written = 0
        var resampler: Resampler?
        var failure: CodecError?
        let channels = encoding.channels
        let outcome = StreamingDecoder(container: container, queue: queue).run { samples, rate, decodedChannels in
            guard decodedChannels == channels else {
                failure = CodecError(.unsupported, "a segment decodes to \(decodedChannels) channels, the recording has \(channels)")
                throw failure!
            }
            if rate != self.encoding.rate, resampler == nil {
                resampler = try Resampler(inputRate: rate, outputRate: self.encoding.rate, channels: channels, quality: .medium)
            }
            let input = Array(samples)
            let converted = resampler?.process(input) ?? input
            let take = min(converted.count / channels, frames - written)
            guard take > 0 else { return }
            try converted.withUnsafeBufferPointer { buffer in
                try self.encoder.encode(UnsafeBufferPointer(rebasing: buffer[0..<(take * channels)]), into: &self.pieces)
            }
            self.pieces.removeAll(keepingCapacity: true)
            written += take
        }
        if let failure { throw failure }
        if let error = outcome.error { throw error }
        if let tail = resampler?.process([], endOfInput: true), written < frames {
            let take = min(tail.count / channels, frames - written)
            if take > 0 {
                try tail.withUnsafeBufferPointer { buffer throws(CodecError) in
                    try encoder.encode(UnsafeBufferPointer(rebasing: buffer[0..<(take * channels)]), into: &pieces)
                }
                written += take
            }
        }
        if written < frames { try silence(frames - written) }
    }
}
