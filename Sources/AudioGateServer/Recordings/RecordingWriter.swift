import AudioGateCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Writes one recording's captured chunks into sample-exact segments (WAV, FLAC or Ogg Opus).
///
/// Segment `n` holds exactly frames `n * segmentFrames ..< (n + 1) * segmentFrames` of the recording,
/// whatever the chunking. Missing audio (the chunk timestamps jump) is written as silence of the
/// same length and listed as a gap. Used by one task at a time, on a thread pool (blocking I/O).
final class RecordingWriter {
    private(set) var info: RecordingInfo
    private let store: RecordingStore
    private let quota: DiskQuota
    private let format: AudioFormat
    private let segmentFrames: Int
    private let maxFrames: Int?
    private let codec: RecordingCodec
    private let bitrate: Int?
    private var segment: (any SegmentWriting)?
    private var framesSinceFlush = 0
    private var expectedTimestamp: UInt64?
    private lazy var silence = [UInt8](repeating: 0, count: format.rate * format.bytesPerFrame / 10)

    init(info: RecordingInfo, request: RecordingRequest, store: RecordingStore, quota: DiskQuota) {
        self.info = info
        self.store = store
        self.quota = quota
        format = request.format
        segmentFrames = request.segmentFrames
        maxFrames = request.maxFrames
        codec = request.codec
        bitrate = request.bitrate
    }

    /// Whether `max_seconds` of audio has been written.
    var reachedLimit: Bool { maxFrames.map { info.frames >= $0 } ?? false }

    /// Writes one chunk whose first frame was captured at `timestamp` (monotonic ns); `gapReason`
    /// names what the events since the last chunk say about a jump in timestamps.
    ///
    /// Answers whether a gap was written (the reason is then used up).
    @discardableResult
    func write(_ bytes: [UInt8], timestamp: UInt64, gapReason: String?) throws(RecordingError) -> Bool {
        let frames = bytes.count / format.bytesPerFrame
        if info.frames == 0 && expectedTimestamp == nil {
            // Date the recording by its first captured frame rather than by the request.
            let age = Double(MonotonicClock.nowNanoseconds() &- timestamp) / 1e9
            info.startedAt = Timestamp.format(Date().addingTimeInterval(-max(0, age)))
        }
        var gapWritten = false
        if let expected = expectedTimestamp, timestamp > expected &+ CaptureHub.jitterNanoseconds {
            let missing = Int((Double(timestamp - expected) * Double(format.rate) / 1e9).rounded())
            try writeGap(frames: missing, reason: gapReason ?? "xrun")
            gapWritten = true
        }
        expectedTimestamp = timestamp &+ UInt64(Double(frames) * 1e9 / Double(format.rate))
        try bytes.withRecordingBytes { raw throws(RecordingError) in try append(raw) }
        return gapWritten
    }

    /// Ends the recording: the open segment is finalized and the metadata saved with `state`.
    func finish(_ state: RecordingInfo.State, failure: RecordingError? = nil, stopReason: String? = nil) {
        var failure = failure
        do {
            try closeSegment()
        } catch {
            failure = failure ?? error
        }
        if let last = info.segments.last, last.frames == 0 {
            let path = store.path(of: info.id, file: last.file)
            var status = stat()
            let size = lstat(path, &status) == 0 ? Int(status.st_size) : 0
            try? RecordingFile.remove(path)
            quota.release(size)
            info.bytes -= size
            info.segments.removeLast()
        }
        info.state = failure == nil ? state : .failed
        info.failure = failure.map { RecordingInfo.Failure(code: $0.code.rawValue, message: $0.message) }
        info.stopReason = info.state == .stopped ? stopReason : nil
        info.endedAt = info.time(atFrame: info.frames)
        saveQuietly()
        store.release(info.id)
    }

    // MARK: - Writing

    private func writeGap(frames: Int, reason: String) throws(RecordingError) {
        guard frames > 0 else { return }
        info.gaps.append(
            RecordingInfo.Gap(startFrame: info.frames, frames: frames, startTime: info.time(atFrame: info.frames), reason: reason))
        var left = frames
        let block = silence.count / format.bytesPerFrame
        while left > 0, !reachedLimit {
            let count = min(left, block)
            try silence.withRecordingBytes { raw throws(RecordingError) in
                try append(UnsafeRawBufferPointer(rebasing: raw[0..<(count * format.bytesPerFrame)]))
            }
            left -= count
        }
        try store.save(info)
    }

    /// Appends whole frames, splitting them at segment boundaries and stopping at `max_seconds`.
    private func append(_ bytes: UnsafeRawBufferPointer) throws(RecordingError) {
        let bytesPerFrame = format.bytesPerFrame
        var offset = 0
        while offset + bytesPerFrame <= bytes.count, !reachedLimit {
            let segment = try openSegment()
            var frames = min(segmentFrames - (info.segments[info.segments.count - 1].frames), (bytes.count - offset) / bytesPerFrame)
            if let maxFrames { frames = min(frames, maxFrames - info.frames) }
            let count = frames * bytesPerFrame
            // The PCM size is reserved first; an encoded segment then gives back what it did not use.
            try quota.reserve(count)
            let before = segment.fileBytes
            do {
                try segment.append(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]))
            } catch {
                quota.release(count)
                throw error
            }
            try settle(reserved: count, grown: segment.fileBytes - before)
            offset += count
            info.frames += frames
            info.segments[info.segments.count - 1].frames += frames
            info.segments[info.segments.count - 1].bytes = segment.readableBytes
            framesSinceFlush += frames
            if info.segments[info.segments.count - 1].frames == segmentFrames || reachedLimit {
                try closeSegment()
            } else if framesSinceFlush >= format.rate {
                // At least once per second of audio: the file is valid up to here.
                try segment.checkpoint()
                framesSinceFlush = 0
            }
        }
    }

    /// Counts what a write really added on disk against the `reserved` bytes.
    private func settle(reserved: Int, grown: Int) throws(RecordingError) {
        if grown > reserved {
            // An encoder emits a whole frame at once, which can outgrow the PCM just given it.
            try quota.reserve(grown - reserved)
        } else {
            quota.release(reserved - grown)
        }
        info.bytes += grown
    }

    private func openSegment() throws(RecordingError) -> any SegmentWriting {
        if let segment { return segment }
        let index = info.segments.count
        let file = RecordingStore.segmentFile(index, codec: codec)
        let path = store.path(of: info.id, file: file)
        let reserve = codec == .wav ? SegmentFile.headerBytes : EncodedSegmentFile.headerReserve
        try quota.reserve(reserve)
        let opened: any SegmentWriting
        do throws(RecordingError) {
            switch codec {
            case .wav: opened = try SegmentFile(creating: path, format: format)
            case .flac, .opus: opened = try EncodedSegmentFile(creating: path, codec: codec, format: format, bitrate: bitrate)
            }
        } catch {
            quota.release(reserve)
            throw error
        }
        segment = opened
        framesSinceFlush = 0
        try settle(reserved: reserve, grown: opened.fileBytes)
        info.segments.append(
            RecordingInfo.Segment(
                index: index, file: file, url: RecordingStore.segmentURL(id: info.id, index: index, codec: codec),
                startFrame: info.frames, frames: 0, startTime: info.time(atFrame: info.frames), complete: false,
                repaired: false, bytes: opened.readableBytes))
        try store.save(info)
        return opened
    }

    private func closeSegment() throws(RecordingError) {
        guard let segment else { return }
        self.segment = nil
        let before = segment.fileBytes
        try segment.finish()
        // The encoder's last frames and the trailer.
        try settle(reserved: 0, grown: segment.fileBytes - before)
        info.segments[info.segments.count - 1].bytes = segment.readableBytes
        info.segments[info.segments.count - 1].complete = true
        try store.save(info)
    }

    private func saveQuietly() {
        do {
            try store.save(info)
        } catch {
            store.logger.error("could not save recording \(info.id): \(error)")
        }
    }
}
