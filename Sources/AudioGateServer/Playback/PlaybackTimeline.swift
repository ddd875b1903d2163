import AudioGateCore
import DequeModule

/// Where a stream's audio is in time: frames queued, taken by the mixer and heard; the marks and
/// latency probes waiting to be heard; clears and underruns. Positions count frames of the mix
/// format from the stream's creation.
///
/// A value kept under its stream's lock; not thread-safe on its own.
struct PlaybackTimeline {
    /// What one render contributed: device frames [deviceStart, +count) carried stream frames [streamStart, +count).
    struct Record {
        var deviceStart: UInt64 = 0
        var streamStart: UInt64 = 0
        var count: UInt64 = 0
    }

    struct PendingMark {
        var position: UInt64
        var name: String
        var listener: Int
    }

    struct LatencyProbe {
        var position: UInt64
        var startNanoseconds: UInt64
        var deviceFrame: UInt64?
    }

    /// Frames ever queued; the next queued frame's position.
    var queuedTotal: UInt64 = 0
    /// Position of the next frame the mixer takes (skips flushed audio).
    var renderedTotal: UInt64 = 0
    /// Frames heard (left the speaker, counting the card's delay).
    var playedTotal: UInt64 = 0
    /// `renderedTotal` at the last clear: `played_ms` counts from here.
    var clearBase: UInt64 = 0
    /// Clears so far, so a producer can tell its audio was flushed while it waited.
    var clears = 0
    var records = [Record](repeating: Record(), count: 64)
    var recordHead = 0
    var recordCount = 0
    /// Oldest first; the device thread takes due ones from the front, so a deque keeps that O(1).
    var marks = Deque<PendingMark>()
    var probes = Deque<LatencyProbe>()
    var clearProbe: (deviceEnd: UInt64, startNanoseconds: UInt64)?
    /// Audio arrived since the last `drained`.
    var drainPending = false
    /// The mixer got audio from this stream in the last period.
    var active = false
    /// Where and when the queue ran dry mid-audio (cleared by new audio or a boundary).
    var dry: (position: UInt64, nanoseconds: UInt64)?
    /// The last position a mark or the end of an upload was placed at (0: none yet).
    var boundary: UInt64 = 0
    var underruns = 0
    var flushedByReformat: UInt64 = 0
    /// When audio first arrived for an idle stream: playback starts once the jitter buffer holds
    /// `prebufferNanoseconds` of audio or that long has passed.
    var startPendingSince: UInt64?
    /// A mark or the end of an upload: nothing more is coming soon, start without prebuffering.
    var startNow = false

    /// Jitter buffer for a stream starting from silence: chunks that arrive up to this late still play gaplessly.
    static let prebufferNanoseconds: UInt64 = 40_000_000
    /// A gap shorter than this between running dry and new audio is an underrun (a listener heard a hole).
    static let underrunWindowNanoseconds: UInt64 = 2_000_000_000

    /// Nothing rendered is still waiting to be heard.
    var allRenderedHeard: Bool { recordCount == 0 }

    // MARK: - Producers

    /// `frames` were queued at `now`; returns whether they ended an underrun (counted here).
    mutating func queued(_ frames: Int, at now: UInt64) -> Bool {
        queuedTotal += UInt64(frames)
        drainPending = true
        if !active && startPendingSince == nil { startPendingSince = now }
        guard let dry else { return false }
        self.dry = nil
        guard boundary < dry.position, now &- dry.nanoseconds < Self.underrunWindowNanoseconds else { return false }
        underruns += 1
        return true
    }

    /// Nothing more is coming soon (a mark or the end of an upload at `position`): running dry
    /// after it is no underrun, and queued audio starts without waiting for the jitter buffer.
    mutating func placeBoundary(at position: UInt64, queueEmpty: Bool) {
        boundary = min(position, queuedTotal)
        startNow = !queueEmpty
    }

    /// Queued audio that will never play (a mix format change) moves the render position past it.
    mutating func skip(_ frames: UInt64) {
        flushedByReformat += frames
        renderedTotal += frames
    }

    /// A clear at `now` dropped `flushed` frames; returns the frames played since the last clear.
    mutating func clear(flushed: UInt64, at now: UInt64) -> UInt64 {
        let played = renderedTotal - clearBase
        renderedTotal += flushed
        clearBase = renderedTotal
        clears += 1
        marks.removeAll()
        probes.removeAll()
        dry = nil
        active = false
        startPendingSince = nil
        startNow = false
        if recordCount > 0 {
            let last = records[(recordHead + recordCount - 1) % records.count]
            clearProbe = (last.deviceStart + last.count, now)
        }
        return played
    }

    // MARK: - Device thread

    /// Whether an idle stream holding `buffered` frames starts playing now (`needed` fill the jitter buffer).
    mutating func starts(buffered: UInt64, needed: UInt64) -> Bool {
        if buffered < needed, !startNow, let since = startPendingSince,
            MonotonicClock.nowNanoseconds() &- since < Self.prebufferNanoseconds
        {
            return false
        }
        startNow = false
        startPendingSince = nil
        return true
    }

    /// The mixer took `taken` of the `wanted` frames for the period starting at device frame `startFrame`.
    mutating func rendered(_ taken: Int, of wanted: Int, startFrame: UInt64) {
        if taken > 0 {
            let first = renderedTotal
            if recordCount == records.count {
                // The device has not reported progress for many periods: count the oldest as heard.
                let oldest = records[recordHead]
                playedTotal = max(playedTotal, oldest.streamStart + oldest.count)
                recordHead = (recordHead + 1) % records.count
                recordCount -= 1
            }
            let slot = (recordHead + recordCount) % records.count
            records[slot] = Record(deviceStart: startFrame, streamStart: first, count: UInt64(taken))
            recordCount += 1
            renderedTotal += UInt64(taken)
            for index in probes.indices where probes[index].deviceFrame == nil {
                let position = probes[index].position
                if position < renderedTotal {
                    probes[index].deviceFrame = startFrame + (position > first ? position - first : 0)
                }
            }
            active = true
        }
        if taken < wanted && active {
            active = false
            dry = (renderedTotal, MonotonicClock.nowNanoseconds())
        }
    }

    /// The card has played everything up to device frame `playedDevice`: moves `playedTotal` on.
    mutating func heard(upTo playedDevice: UInt64) {
        while recordCount > 0 {
            let record = records[recordHead]
            if record.deviceStart + record.count <= playedDevice {
                playedTotal = max(playedTotal, record.streamStart + record.count)
                recordHead = (recordHead + 1) % records.count
                recordCount -= 1
            } else {
                if record.deviceStart < playedDevice {
                    playedTotal = max(playedTotal, record.streamStart + (playedDevice - record.deviceStart))
                }
                break
            }
        }
        if recordCount == 0 { playedTotal = max(playedTotal, renderedTotal) }
    }
}
