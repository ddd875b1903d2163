import AudioGateCore
import AudioGateDevices
import CFFmpeg

/// Decodes a stored FLAC or Ogg Opus segment to interleaved float at the recording's rate, a block at
/// a time, for export.
///
/// The demuxer reads from a `ByteQueue`, whose reader blocks when it runs dry; the file is fed into
/// the queue before every packet is read until the queue is over its limit (far more than one Ogg
/// page or FLAC frame) or the file has ended, so the reader never waits. Blocking file and CPU work:
/// run it on the thread pool, one call at a time.
final class SegmentDecoder {
    /// Bytes read from the file at a time.
    static let readBytes = 64 << 10

    private let file: FileDescriptorBox
    /// Bytes of the file to decode: its whole frames or pages when it was listed.
    private let length: Int
    private let format: AudioFormat
    private let queue = ByteQueue()
    private var fileOffset = 0
    private var fileEnded = false
    private let demuxer: DemuxerHandle
    private let decoder: DecoderHandle
    private let streamIndex: Int32
    private let packet: PacketHandle
    private let frame: FrameHandle
    private var resampler: Resampler?
    private var pending: [Float] = []
    private var scratch: [Float] = []
    private var inputEnded = false

    init(path: String, codec: RecordingCodec, format: AudioFormat, bytes: Int) throws {
        file = try FileDescriptorBox(path: path)
        length = bytes
        self.format = format
        try Self.topUp(queue, file: file, length: length, offset: &fileOffset, ended: &fileEnded)
        demuxer = try DemuxerHandle(container: codec == .flac ? .flac : .ogg, source: queue)
        let (index, parameters) = try demuxer.audioStream()
        streamIndex = index
        decoder = try DecoderHandle(parameters: parameters)
        packet = try PacketHandle()
        frame = try FrameHandle()
    }

    /// Up to `frames` interleaved frames at the recording's rate; fewer only at the end (none after it).
    func next(_ frames: Int) throws -> [Float] {
        let wanted = frames * format.channels
        while pending.count < wanted, !inputEnded {
            try Self.topUp(queue, file: file, length: length, offset: &fileOffset, ended: &fileEnded)
            if try demuxer.read(into: packet) {
                defer { packet.unref() }
                guard packet.packet.pointee.stream_index == streamIndex else { continue }
                try decode(packet)
            } else {
                try decode(nil)
                inputEnded = true
            }
            if inputEnded, let tail = resampler?.process([], endOfInput: true) { pending += tail }
        }
        let count = min(wanted, pending.count)
        let block = Array(pending[0..<count])
        pending.removeFirst(count)
        return block
    }

    /// The one decode step: `packet` (nil at the end of the file) in, its frames appended to `pending`.
    private func decode(_ packet: PacketHandle?) throws {
        try decoder.decode(packet, into: frame, failure: { $0 as any Error }) { decoded throws(any Error) in
            let channels = decoded.channels
            guard channels == format.channels else {
                throw CodecError(.corrupt, "the segment decodes to \(channels) channels, not the recording's \(format.channels)")
            }
            let count = try decoded.interleave(into: &scratch)
            let samples = Array(scratch[0..<count])
            // Opus decodes at 48 kHz whatever rate it was made from.
            if decoded.rate != format.rate, resampler == nil {
                resampler = try Resampler(inputRate: decoded.rate, outputRate: format.rate, channels: channels, quality: .medium)
            }
            pending += resampler?.process(samples) ?? samples
        }
    }

    /// Feeds the file's first `length` bytes into the queue until the queue is over its limit or
    /// they have all gone in (a segment still being written may have part of a page after them).
    private static func topUp(_ queue: ByteQueue, file: FileDescriptorBox, length: Int, offset: inout Int, ended: inout Bool) throws {
        while !ended {
            let bytes = try file.read(min(readBytes, length - offset), at: offset)
            if bytes.isEmpty {
                ended = true
                queue.finish()
                return
            }
            guard queue.offer(bytes) else {
                // Full: these bytes go in on the next call.
                return
            }
            offset += bytes.count
        }
    }
}
