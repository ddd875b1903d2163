import AudioGateCore
import DequeModule

/// Where a stream's audio is in time: frames queued, taken by the mixer and heard; the marks and
/// latency probes waiting to be heard; clears and underruns. Positions count frames of the mix
/// format from the stream's creation.
///
/// A value kept under its stream's lock; not thread-safe on its own. Its transitions (`queued`,
/// `starts`, `rendered`, `progress`, `clear`) move `flow` on and hand back what the stream acts on
/// once the lock is let go.
struct PlaybackTimeline {
    /// What one render contributed: device frames [deviceStart, +count) carried stream frames [streamStart, +count).
    struct Record {
        var deviceStart: UInt64 = 0
        var streamStart: UInt64 = 0
        var count: UInt64 = 0
    }

    /// Where a stream's playing is; `queued`, `starts`, `rendered` and `clear` move it on.
    enum Flow: Equatable {
        /// Nothing arrived since the stream was created, cleared or started.
        case idle
        /// Audio arrived at `since` for a stream that was not playing: it starts once the jitter
        /// buffer holds `prebufferNanoseconds` of audio or that long has passed.
        case buffering(since: UInt64)
        /// The mixer got audio from this stream in the last period.
        case playing
        /// The queue ran dry mid-audio at `position`, at `nanoseconds`: audio arriving within
        /// `underrunWindowNanoseconds` after it is an underrun.
        case ranDry(position: UInt64, nanoseconds: UInt64)
    }

    /// Where the stream is in telling its listeners it started to be heard.
    enum RunStart: Equatable {
        /// Silent (just opened, drained or cleared): the next frame rendered starts a run.
        case waiting
        /// A run's first frame was rendered at this stream position and is on its way to the speaker.
        case rendered(position: UInt64)
        /// `started` was sent; nothing more until the stream falls silent again.
        case told
    }

    struct PendingMark {
        var position: UInt64
        var name: String
        var listener: Int
    }

    /// A clear waiting for the card to fall silent: the device frame after the last one rendered
    /// before it, and when it came.
    struct ClearProbe {
        var deviceEnd: UInt64
        var startNanoseconds: UInt64
    }

    /// What the card having played up to a device frame set off, for the stream to act on once
    /// its lock is let go: events to send and spans to record.
    struct Progress {
        /// Events for the stream's listeners, in order: each heard mark to the listener that
        /// placed it, then `drained` to every listener.
        var sends: [Send] = []
        /// From each latency probe's start until its frame was heard.
        var latencies: [Span] = []
        /// From the last measured clear until its audio was heard to its end.
        var clearToSilence: Span?

        var isEmpty: Bool { sends.isEmpty && latencies.isEmpty && clearToSilence == nil }
    }

    /// An event for one listener (by id) or, with `listener` nil, for every listener.
    struct Send {
        var listener: Int?
        var event: PlaybackEvent
    }

    /// A span ending when the card played a frame `endFramesAgo` frames (at `rate`) before the
    /// one it plays when the span is read.
    struct Span {
        var startNanoseconds: UInt64
        var endFramesAgo: UInt64
        var rate: Int

        /// The span's length in nanoseconds, read at `now`.
        func nanoseconds(at now: UInt64) -> Int64 {
            let end = now &- endFramesAgo * 1_000_000_000 / UInt64(max(rate, 1))
            return Int64(bitPattern: end &- startNanoseconds)
        }
    }

    struct LatencyProbe {
        var position: UInt64
        var startNanoseconds: UInt64
        var deviceFrame: UInt64?
    }

    /// Frames ever queued; the next queued frame's position.
    private(set) var queuedTotal: UInt64 = 0
    /// Position of the next frame the mixer takes (skips flushed audio).
    private(set) var renderedTotal: UInt64 = 0
    /// Frames heard (left the speaker, counting the card's delay).
    private(set) var playedTotal: UInt64 = 0
    /// `renderedTotal` at the last clear: `played_ms` counts from here.
    private(set) var clearBase: UInt64 = 0
    /// Clears so far, so a producer can tell its audio was flushed while it waited.
    private(set) var clears = 0
    private(set) var records = [Record](repeating: Record(), count: 64)
    private(set) var recordHead = 0
    private(set) var recordCount = 0
    /// Oldest first; the device thread takes due ones from the front, so a deque keeps that O(1).
    private var marks = Deque<PendingMark>()
    private var probes = Deque<LatencyProbe>()
    private var clearProbe: ClearProbe?
    /// Audio arrived since the last `drained`.
    private(set) var drainPending = false
    /// Whether the stream plays, fills its jitter buffer or ran dry.
    private(set) var flow = Flow.idle
    private(set) var runStart = RunStart.waiting
    /// The last position a mark or the end of an upload was placed at (0: none yet).
    private(set) var boundary: UInt64 = 0
    private(set) var underruns = 0
    private(set) var flushedByReformat: UInt64 = 0
    /// A mark or the end of an upload: nothing more is coming soon, start without prebuffering.
    private(set) var startNow = false

    /// Jitter buffer for a stream starting from silence: chunks that arrive up to this late still play gaplessly.
    static let prebufferNanoseconds: UInt64 = 40_000_000
    /// A gap shorter than this between running dry and new audio is an underrun (a listener heard a hole).
    static let underrunWindowNanoseconds: UInt64 = 2_000_000_000

    /// The mixer got audio from this stream in the last period.
    var active: Bool { flow == .playing }

    /// Nothing rendered is still waiting to be heard.
    var allRenderedHeard: Bool { recordCount == 0 }

    /// The names of the marks not yet heard, oldest first.
    var pendingMarkNames: [String] { marks.map(\.name) }

    // MARK: - Producers

    /// `frames` were queued at `now`; returns whether they ended an underrun (counted here).
    mutating func queued(_ frames: Int, at now: UInt64) -> Bool {
        queuedTotal += UInt64(frames)
        drainPending = true
        switch flow {
        case .playing, .buffering:
            return false
        case .idle:
            flow = .buffering(since: now)
            return false
        case .ranDry(let position, let nanoseconds):
            flow = .buffering(since: now)
            guard boundary < position, now &- nanoseconds < Self.underrunWindowNanoseconds else { return false }
        }
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
    /// A `measured` one times how long until the card falls silent.
    mutating func clear(flushed: UInt64, at now: UInt64, measured: Bool = true) -> UInt64 {
        let played = renderedTotal - clearBase
        renderedTotal += flushed
        clearBase = renderedTotal
        clears += 1
        marks.removeAll()
        probes.removeAll()
        flow = .idle
        runStart = .waiting
        startNow = false
        if measured, recordCount > 0 {
            let last = records[(recordHead + recordCount - 1) % records.count]
            clearProbe = ClearProbe(deviceEnd: last.deviceStart + last.count, startNanoseconds: now)
        }
        return played
    }

    /// Asks for `listener` to be told when `position` is heard, unless `limit` marks already wait.
    mutating func addMark(_ name: String, listener: Int, at position: UInt64, limit: Int, queueEmpty: Bool) -> Bool {
        guard marks.count < limit else { return false }
        marks.append(PendingMark(position: position, name: name, listener: listener))
        placeBoundary(at: position, queueEmpty: queueEmpty)
        return true
    }

    /// Drops the marks a listener that went away was waiting for.
    mutating func forgetMarks(of listener: Int) {
        marks.removeAll { $0.listener == listener }
    }

    /// Measures from `startNanoseconds` until the frame at `position` is heard.
    mutating func addProbe(position: UInt64, startNanoseconds: UInt64) {
        probes.append(LatencyProbe(position: position, startNanoseconds: startNanoseconds))
    }

    // MARK: - Device thread

    /// The card (at `rate`) has played everything up to device frame `playedDevice`: moves
    /// `playedTotal` on and takes out what that set off. `queueEmpty`: nothing is left to render.
    mutating func progress(playedDevice: UInt64, rate: Int, queueEmpty: Bool) -> Progress {
        var progress = Progress()
        heard(upTo: playedDevice)
        if case .rendered(let position) = runStart, playedTotal > position {
            progress.sends.append(Send(listener: nil, event: .started))
            runStart = .told
        }
        let allHeard = allRenderedHeard && queueEmpty
        // A mark may sit a few frames past what the resampler has released; once everything is
        // heard nothing before it is left to play.
        while let mark = marks.first, mark.position <= playedTotal || allHeard {
            progress.sends.append(Send(listener: mark.listener, event: .mark(name: mark.name)))
            _ = marks.popFirst()
        }
        if allHeard && drainPending {
            drainPending = false
            runStart = .waiting
            progress.sends.append(Send(listener: nil, event: .drained))
        }
        while let probe = probes.first, let deviceFrame = probe.deviceFrame, deviceFrame <= playedDevice {
            progress.latencies.append(
                Span(startNanoseconds: probe.startNanoseconds, endFramesAgo: playedDevice - deviceFrame, rate: rate))
            _ = probes.popFirst()
        }
        if let clearProbe, clearProbe.deviceEnd <= playedDevice {
            progress.clearToSilence = Span(
                startNanoseconds: clearProbe.startNanoseconds, endFramesAgo: playedDevice - clearProbe.deviceEnd, rate: rate)
            self.clearProbe = nil
        }
        return progress
    }

    /// Whether an idle stream holding `buffered` frames starts playing now (`needed` fill the jitter buffer).
    mutating func starts(buffered: UInt64, needed: UInt64) -> Bool {
        if buffered < needed, !startNow, case .buffering(let since) = flow,
            MonotonicClock.nowNanoseconds() &- since < Self.prebufferNanoseconds
        {
            return false
        }
        startNow = false
        // Playing from the first frame the mixer takes (`rendered`).
        if case .buffering = flow { flow = .idle }
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
            if runStart == .waiting { runStart = .rendered(position: first) }
            for index in probes.indices where probes[index].deviceFrame == nil {
                let position = probes[index].position
                if position < renderedTotal {
                    probes[index].deviceFrame = startFrame + (position > first ? position - first : 0)
                }
            }
            flow = .playing
        }
        if taken < wanted && flow == .playing {
            flow = .ranDry(position: renderedTotal, nanoseconds: MonotonicClock.nowNanoseconds())
        }
    }

    private mutating func heard(upTo playedDevice: UInt64) {
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
