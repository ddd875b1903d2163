import AudioGateCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Writes one recording's captured chunks into sample-exact WAV segments.
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
    private var segment: SegmentFile?
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
            unlink(store.path(of: info.id, file: last.file))
            quota.release(SegmentFile.headerBytes)
            info.bytes -= SegmentFile.headerBytes
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
            try quota.reserve(count)
            do {
                try segment.append(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]))
            } catch {
                quota.release(count)
                throw error
            }
            offset += count
            info.frames += frames
            info.bytes += count
            info.segments[info.segments.count - 1].frames += frames
            framesSinceFlush += frames
            if info.segments[info.segments.count - 1].frames == segmentFrames || reachedLimit {
                try closeSegment()
            } else if framesSinceFlush >= format.rate {
                // At least once per second of audio: the file is a valid WAV up to here.
                try segment.flushHeader()
                framesSinceFlush = 0
            }
        }
    }

    private func openSegment() throws(RecordingError) -> SegmentFile {
        if let segment { return segment }
        let index = info.segments.count
        let file = RecordingStore.segmentFile(index)
        try quota.reserve(SegmentFile.headerBytes)
        let opened: SegmentFile
        do {
            opened = try SegmentFile(creating: store.path(of: info.id, file: file), format: format)
        } catch {
            quota.release(SegmentFile.headerBytes)
            throw error
        }
        segment = opened
        framesSinceFlush = 0
        info.bytes += SegmentFile.headerBytes
        info.segments.append(
            RecordingInfo.Segment(
                index: index, file: file, url: RecordingStore.segmentURL(id: info.id, index: index),
                startFrame: info.frames, frames: 0, startTime: info.time(atFrame: info.frames), complete: false,
                repaired: false))
        try store.save(info)
        return opened
    }

    private func closeSegment() throws(RecordingError) {
        guard let segment else { return }
        self.segment = nil
        try segment.finish()
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
