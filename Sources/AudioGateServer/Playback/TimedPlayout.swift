import AudioGateCore

/// A timed stream's queue and its playout decisions, in the mix format: which queued frame goes
/// into each frame of a period so that every frame leaves the card at its presentation time.
///
/// Frames are numbered from the last reset (`position`); chunks add records dating a position, and
/// a frame between records is dated from the record before it at the mix rate, so a resampler's
/// held-back tail is dated from the input it came from. At the start of each period the queue's
/// head is compared with the time the period's first frame leaves the card:
/// - not playing: late frames are dropped, and an early head waits, starting at the exact frame of
///   a period (silence before it);
/// - playing, off by more than `resyncNanoseconds` (the output clock jumped): a short fade out, then
///   a fresh start with a fade in;
/// - a chunk dated more than `resyncNanoseconds` away from where the one before ends (a gap, an
///   overlap): the one before ends whole, the new one starts at its own time with a fade in;
/// - playing, off by more than `correctAboveFrames`: single frames are dropped or repeated, one every
///   `correctionInterval` frames (0.2 % of the rate) until the error is under `correctBelowFrames`.
///
/// These decisions are the transitions between three phases (`Phase`): waiting for a chunk's
/// time, playing, and fading out what a reset cut. A render hands back what the stream acts on
/// once its lock is let go (`Rendered`: producers to wake, an underrun to count).
///
/// Owned by one stream and used only under its lock (a class, so the stream's playout enum
/// holds one reference and a transition changes it in place); rendering never allocates.
final class TimedPlayout {
    struct Record {
        /// Frame position (from the last reset) of the chunk's first frame; fractional after resampling.
        var position: Double
        /// Monotonic nanoseconds at which that frame must leave the card.
        var time: Double
    }

    static let resyncNanoseconds = 50_000_000.0
    /// One correction per this many frames: 0.2 % of any rate.
    static let correctionInterval = 500
    static let correctAboveFrames = 2.0
    static let correctBelowFrames = 0.5
    static let fadeMilliseconds = 5
    static let recordCapacity = 8192

    let rate: Int
    let channels: Int
    let limitFrames: Int
    private(set) var ring: RingBuffer<Float>
    private var records: [Record]
    private var recordHead = 0
    private(set) var recordCount = 0
    /// Frames taken from the queue (played or dropped) since the last reset.
    private(set) var headPosition: Int64 = 0
    /// Frames queued since the last reset.
    private(set) var tailPosition: Int64 = 0
    /// Where the playout is; `render` moves it from one phase to the next.
    private(set) var phase = Phase.waiting(fadeIn: nil)
    private var lastFrame: [Float]
    /// What was about to play when the stream was reset, faded out at the next period.
    private var fadeTail: [Float]
    private let fadeFrames: Int
    var statistics = TimedPlaybackStatistics()
    /// Resets so far; a producer that converted for an earlier generation starts over.
    private(set) var generation: Int
    /// Producers waiting for the queue to fall to the low watermark.
    private var waiters = WaiterList()

    enum Phase: Equatable {
        /// Not playing: the head waits for its time. `fadeIn` is the ramp its start applies: a
        /// fresh one after a resync or a gap, what is left of one an underrun cut short.
        case waiting(fadeIn: GainRamp?)
        /// Playing from the head.
        case playing(Playing)
        /// A reset cut the stream while it played: the next period fades out `frames` frames of
        /// what was about to play, then the playout waits.
        case fadingOut(frames: Int)
    }

    /// A playout that plays: its fade in while it lasts and its drift correction.
    struct Playing: Equatable {
        var fadeIn: GainRamp?
        var correction = Correction.none
        /// Frames until the next single-frame correction.
        var untilCorrection = TimedPlayout.correctionInterval

        /// Starts or stops correcting for an error of `errorFrames` (positive: the head is early),
        /// with hysteresis between `correctAboveFrames` and `correctBelowFrames`.
        mutating func steer(errorFrames: Double) {
            switch correction {
            case .none:
                if errorFrames > TimedPlayout.correctAboveFrames {
                    correction = .inserting
                } else if errorFrames < -TimedPlayout.correctAboveFrames {
                    correction = .dropping
                } else {
                    return
                }
                untilCorrection = TimedPlayout.correctionInterval / 2
            case .inserting:
                if errorFrames < TimedPlayout.correctBelowFrames { correction = .none }
            case .dropping:
                if errorFrames > -TimedPlayout.correctBelowFrames { correction = .none }
            }
        }
    }

    /// How a playing playout slides back to its chunks' times.
    enum Correction: Equatable {
        case none
        /// The head is early: one frame repeated every `correctionInterval`.
        case inserting
        /// The head is late: one frame dropped every `correctionInterval`.
        case dropping
    }

    /// The first frame of the chunk after the one in force, and when it must leave the card.
    struct Boundary {
        var frame: Int64
        var time: Double
    }

    /// What one render did, for the stream to act on once its lock is let go.
    struct Rendered {
        /// 0 (the stream is silent) or the whole period, silence before a chunk's time included.
        var filled: Int
        /// Producers to wake: the device took the queue to its low watermark.
        var wakes: WaiterList.Wakes
        /// The playout ran dry while playing (an underrun).
        var underran: Bool
    }

    /// Whether the playout plays (not waiting for a chunk's time, not fading out a reset).
    var playing: Bool {
        if case .playing = phase { return true }
        return false
    }

    init(format: AudioFormat, limitSeconds: Int, generation: Int = 0) {
        self.generation = generation
        rate = format.rate
        channels = max(format.channels, 1)
        limitFrames = max(limitSeconds, 1) * format.rate
        ring = RingBuffer(
            capacity: (limitFrames + 8192) * channels, initialCapacity: format.rate / 2 * channels)
        records = [Record](repeating: Record(position: 0, time: 0), count: Self.recordCapacity)
        lastFrame = [Float](repeating: 0, count: channels)
        fadeTail = [Float](repeating: 0, count: max(1, format.rate * Self.fadeMilliseconds / 1000) * channels)
        fadeFrames = max(1, format.rate * Self.fadeMilliseconds / 1000)
    }

    var frames: Int { ring.count / channels }
    var isEmpty: Bool { ring.isEmpty }
    /// Whether a producer may queue another chunk (the high watermark).
    var hasRoom: Bool { frames < limitFrames && recordCount < Self.recordCapacity }
    /// At or below this the device wakes waiting producers, as `PlayoutQueue` does.
    private var atLowWatermark: Bool {
        frames <= limitFrames - limitFrames / 4 && recordCount <= Self.recordCapacity - Self.recordCapacity / 4
    }
    func matches(_ format: AudioFormat) -> Bool { format.rate == rate && format.channels == channels }

    // MARK: - Producer side

    /// Dates the frame at `position` (a chunk's first frame).
    func addRecord(position: Double, time: Double) {
        if recordCount == Self.recordCapacity {
            recordHead = (recordHead + 1) % Self.recordCapacity
            recordCount -= 1
        }
        records[(recordHead + recordCount) % Self.recordCapacity] = Record(position: position, time: time)
        recordCount += 1
    }

    /// Moves every queued chunk's time by `nanoseconds`: the producer's estimate of its source's
    /// clock moved, and what it dated with the old estimate must play on the new one.
    func retime(by nanoseconds: Double) {
        for index in 0..<recordCount {
            records[(recordHead + index) % Self.recordCapacity].time += nanoseconds
        }
    }

    /// Queues converted frames; returns the frames written.
    @discardableResult
    func write(_ samples: UnsafeBufferPointer<Float>) -> Int {
        let written = ring.write(samples) / channels
        tailPosition += Int64(written)
        return written
    }

    /// Registers `wake` for when the queue has room again; nil when it has room now.
    func waitForRoom(_ wake: @escaping WaiterList.Wake) -> Int? {
        hasRoom ? nil : waiters.add(wake)
    }

    /// Forgets a waiter whose producer stopped waiting.
    func cancelWait(_ id: Int) {
        waiters.remove(id)
    }

    /// The producers to wake once the device has taken the queue to its low watermark.
    private func takeWakes() -> WaiterList.Wakes {
        guard !waiters.isEmpty, atLowWatermark else { return .none }
        return waiters.takeAll()
    }

    /// Drops everything queued; positions start again at 0. Returns the producers to wake.
    func reset() -> WaiterList.Wakes {
        switch phase {
        case .playing:
            // Cut mid-sound, the music would click: its next few milliseconds fade out instead
            // (with nothing queued, there is nothing to fade).
            let tail = fadeTail.withUnsafeMutableBufferPointer { ring.peek(into: $0) } / channels
            phase = tail > 0 ? .fadingOut(frames: tail) : .waiting(fadeIn: nil)
        case .waiting:
            phase = .waiting(fadeIn: nil)
        case .fadingOut:
            break
        }
        ring.removeAll()
        recordHead = 0
        recordCount = 0
        headPosition = 0
        tailPosition = 0
        generation += 1
        return waiters.isEmpty ? .none : waiters.takeAll()
    }

    // MARK: - Device side

    /// When the frame at `position` must leave the card, from the last record at or before it.
    func time(of position: Int64) -> Double? {
        guard recordCount > 0 else { return nil }
        let record = records[recordHead]
        return record.time + (Double(position) - record.position) * 1e9 / Double(rate)
    }

    /// Forgets records the head has passed: the one in force stays first.
    private func advanceRecords() {
        let head = Double(headPosition) + 1e-6
        while recordCount >= 2, records[(recordHead + 1) % Self.recordCapacity].position <= head {
            recordHead = (recordHead + 1) % Self.recordCapacity
            recordCount -= 1
        }
    }

    /// Drops `count` frames from the head, counting the chunks whose start was dropped.
    private func dropLate(_ count: Int) {
        // A record's first frame is the first whole frame at or after its position.
        let from = Double(headPosition) - 1 + 1e-6
        let dropped = ring.discard(count * channels) / channels
        headPosition += Int64(dropped)
        let to = Double(headPosition) - 1 + 1e-6
        for index in 0..<recordCount {
            let position = records[(recordHead + index) % Self.recordCapacity].position
            if position > to { break }
            if position > from { statistics.lateChunks += 1 }
        }
        statistics.lateFrames += dropped
        advanceRecords()
    }

    /// The first frame of the record after the one in force, if one is queued.
    private var nextBoundary: Boundary? {
        guard recordCount >= 2 else { return nil }
        let record = records[(recordHead + 1) % Self.recordCapacity]
        let frame = Int64((record.position - 1e-6).rounded(.up))
        return Boundary(frame: frame, time: record.time + (Double(frame) - record.position) * 1e9 / Double(rate))
    }

    /// Fills `frames` frames of `destination` for a period whose first frame leaves the card at
    /// `startTime` (monotonic nanoseconds): the whole period, silence included, or nothing.
    func render(into destination: UnsafeMutableBufferPointer<Float>, frames: Int, startTime: Double) -> Rendered {
        let underruns = statistics.underruns
        let filled = fill(destination, frames: frames, startTime: startTime)
        return Rendered(filled: filled, wakes: takeWakes(), underran: statistics.underruns != underruns)
    }

    private func fill(_ destination: UnsafeMutableBufferPointer<Float>, frames: Int, startTime: Double) -> Int {
        guard frames > 0, destination.count >= frames * channels, let output = destination.baseAddress else { return 0 }
        advanceRecords()
        if case .fadingOut(let tail) = phase {
            phase = .waiting(fadeIn: nil)
            let faded = min(tail, frames)
            fadeTail.withUnsafeBufferPointer { output.update(from: $0.baseAddress!, count: faded * channels) }
            // The rest of the period stays silent; what was queued since starts next period at its time.
            fadeOut(output, faded: faded, frames: frames)
            return frames
        }
        guard !ring.isEmpty, let headTime = time(of: headPosition) else {
            ranDry()
            return 0
        }
        let nanosecondsPerFrame = 1e9 / Double(rate)
        let error = headTime - startTime
        statistics.offsetMicroseconds = playing ? -error / 1000 : nil
        if case .playing(var play) = phase {
            if abs(error) > Self.resyncNanoseconds {
                // Too far off to slide back: fade out what plays now, then start over at the right frame.
                let fading = UnsafeMutableBufferPointer(start: output, count: min(fadeFrames, frames) * channels)
                let faded = ring.read(into: fading) / channels
                headPosition += Int64(faded)
                fadeOut(output, faded: faded, frames: frames)
                phase = .waiting(fadeIn: GainRamp(from: 0, to: 1, frames: fadeFrames))
                statistics.resyncs += 1
                return frames
            }
            play.steer(errorFrames: error / nanosecondsPerFrame)
            phase = .playing(play)
        }
        var written = 0
        var copiedAny = false
        while written < frames {
            guard !ring.isEmpty else {
                ranDry()
                break
            }
            if case .waiting(let fadeIn) = phase {
                // Starting: the head goes to the frame of this period that leaves at its time.
                guard let offset = dueOffset(at: startTime + Double(written) * nanosecondsPerFrame), offset < frames - written
                else { break }
                (output + written * channels).update(repeating: 0, count: offset * channels)
                written += offset
                phase = .playing(Playing(fadeIn: fadeIn))
            }
            guard case .playing(var play) = phase else { break }
            var chunk = frames - written
            if play.correction != .none { chunk = min(chunk, play.untilCorrection) }
            let boundary = nextBoundary
            if let boundary { chunk = min(chunk, Int(max(0, boundary.frame - headPosition))) }
            if chunk > 0 {
                let copied =
                    ring.read(into: UnsafeMutableBufferPointer(start: output + written * channels, count: chunk * channels))
                    / channels
                if var ramp = play.fadeIn {
                    SampleMath.ramp(output + written * channels, frames: copied, channels: channels, &ramp)
                    play.fadeIn = ramp.isDone ? nil : ramp
                }
                written += copied
                headPosition += Int64(copied)
                copiedAny = copiedAny || copied > 0
                if play.correction != .none { play.untilCorrection -= copied }
            }
            if let boundary, headPosition >= boundary.frame {
                cross(boundary, playing: play)
                continue
            }
            if play.correction != .none, play.untilCorrection <= 0, written < frames, !ring.isEmpty {
                play.untilCorrection = Self.correctionInterval
                written += correct(play.correction, output: output, at: written)
            }
            phase = .playing(play)
        }
        guard copiedAny else {
            if !playing { statistics.offsetMicroseconds = nil }
            return 0
        }
        (output + written * channels).update(repeating: 0, count: (frames - written) * channels)
        for channel in 0..<channels { lastFrame[channel] = output[(written - 1) * channels + channel] }
        return frames
    }

    /// Playing, the queue emptied: the next chunk starts afresh at its own time, with what is left
    /// of a fade in that was under way.
    private func ranDry() {
        guard case .playing(let play) = phase else { return }
        phase = .waiting(fadeIn: play.fadeIn)
        statistics.underruns += 1
    }

    /// Waiting, at a frame leaving the card at `time`: drops what is already late and answers how
    /// many frames on the head is due; nil when nothing is left.
    private func dueOffset(at time: Double) -> Int? {
        let nanosecondsPerFrame = 1e9 / Double(rate)
        guard var lead = self.time(of: headPosition).map({ $0 - time }) else { return nil }
        if lead < -nanosecondsPerFrame / 2 {
            dropLate(Int((-lead / nanosecondsPerFrame).rounded()))
            guard !ring.isEmpty, let next = self.time(of: headPosition) else { return nil }
            lead = next - time
        }
        return max(0, Int((lead / nanosecondsPerFrame).rounded()))
    }

    /// Playing, the head reached the next chunk's first frame. A chunk dated away from where the
    /// last one ends (a gap, or an overlap): past `resyncNanoseconds` it starts at its own time
    /// with a fade in; a smaller step is slid back by correction.
    private func cross(_ boundary: Boundary, playing play: Playing) {
        let continued = time(of: headPosition) ?? boundary.time
        advanceRecords()
        if abs(boundary.time - continued) > Self.resyncNanoseconds {
            phase = .waiting(fadeIn: GainRamp(from: 0, to: 1, frames: fadeFrames))
            statistics.resyncs += 1
        } else {
            phase = .playing(play)
        }
    }

    /// One frame repeated at `frame` of `output` (the head leaves a frame later) or dropped from
    /// the head; returns the frames added to the output.
    private func correct(_ correction: Correction, output: UnsafeMutablePointer<Float>, at frame: Int) -> Int {
        switch correction {
        case .none:
            return 0
        case .inserting:
            for channel in 0..<channels {
                output[frame * channels + channel] = frame > 0 ? output[(frame - 1) * channels + channel] : lastFrame[channel]
            }
            statistics.framesInserted += 1
            return 1
        case .dropping:
            if ring.discard(channels) == channels {
                headPosition += 1
                statistics.framesDropped += 1
            }
            return 0
        }
    }

    /// Fades out the `faded` frames at the start of `output` and silences the rest of its `frames`.
    private func fadeOut(_ output: UnsafeMutablePointer<Float>, faded: Int, frames: Int) {
        var ramp = GainRamp(from: 1, to: 0, frames: faded)
        SampleMath.ramp(output, frames: faded, channels: channels, &ramp)
        (output + faded * channels).update(repeating: 0, count: (frames - faded) * channels)
    }
}
