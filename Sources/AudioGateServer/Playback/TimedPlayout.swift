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
/// A value kept under its stream's lock; rendering never allocates.
struct TimedPlayout {
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
    private(set) var playing = false
    /// The fade in of a fresh start after a resync, while it lasts.
    private var fadeIn: GainRamp?
    private var fadeInPending = false
    /// +1 inserting (the head is early), -1 dropping (late), 0 on time.
    private var correcting = 0
    private var untilCorrection = correctionInterval
    private var lastFrame: [Float]
    /// What was about to play when the stream was reset, faded out at the next period.
    private var fadeTail: [Float]
    private var fadeTailFrames = 0
    private let fadeFrames: Int
    var statistics = TimedPlaybackStatistics()
    /// Resets so far; a producer that converted for an earlier generation starts over.
    private(set) var generation: Int
    /// Producers waiting for the queue to fall to the low watermark.
    private var waiters = WaiterList()

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
    mutating func addRecord(position: Double, time: Double) {
        if recordCount == Self.recordCapacity {
            recordHead = (recordHead + 1) % Self.recordCapacity
            recordCount -= 1
        }
        records[(recordHead + recordCount) % Self.recordCapacity] = Record(position: position, time: time)
        recordCount += 1
    }

    /// Queues converted frames; returns the frames written.
    @discardableResult
    mutating func write(_ samples: UnsafeBufferPointer<Float>) -> Int {
        let written = ring.write(samples) / channels
        tailPosition += Int64(written)
        return written
    }

    /// Registers `wake` for when the queue has room again; nil when it has room now.
    mutating func waitForRoom(_ wake: @escaping WaiterList.Wake) -> Int? {
        hasRoom ? nil : waiters.add(wake)
    }

    /// Forgets a waiter whose producer stopped waiting.
    mutating func cancelWait(_ id: Int) {
        waiters.remove(id)
    }

    /// The producers to wake once the device has taken the queue to its low watermark.
    mutating func takeWakes() -> WaiterList.Wakes {
        guard !waiters.isEmpty, atLowWatermark else { return .none }
        return waiters.takeAll()
    }

    /// Drops everything queued; positions start again at 0. Returns the producers to wake.
    mutating func reset() -> WaiterList.Wakes {
        if playing {
            // Cut mid-sound, the music would click: its next few milliseconds fade out instead.
            fadeTailFrames = fadeTail.withUnsafeMutableBufferPointer { ring.peek(into: $0) } / channels
        }
        ring.removeAll()
        recordHead = 0
        recordCount = 0
        headPosition = 0
        tailPosition = 0
        playing = false
        correcting = 0
        fadeIn = nil
        fadeInPending = false
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
    private mutating func advanceRecords() {
        let head = Double(headPosition) + 1e-6
        while recordCount >= 2, records[(recordHead + 1) % Self.recordCapacity].position <= head {
            recordHead = (recordHead + 1) % Self.recordCapacity
            recordCount -= 1
        }
    }

    /// Drops `count` frames from the head, counting the chunks whose start was dropped.
    private mutating func dropLate(_ count: Int) {
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
    private var nextBoundary: (frame: Int64, time: Double)? {
        guard recordCount >= 2 else { return nil }
        let record = records[(recordHead + 1) % Self.recordCapacity]
        let frame = Int64((record.position - 1e-6).rounded(.up))
        return (frame, record.time + (Double(frame) - record.position) * 1e9 / Double(rate))
    }

    /// Fills `frames` frames of `destination` for a period whose first frame leaves the card at
    /// `startTime` (monotonic nanoseconds); returns the frames filled (0: the stream is silent;
    /// otherwise `frames`, silence included).
    mutating func render(into destination: UnsafeMutableBufferPointer<Float>, frames: Int, startTime: Double) -> Int {
        guard frames > 0, destination.count >= frames * channels, let output = destination.baseAddress else { return 0 }
        advanceRecords()
        if fadeTailFrames > 0 {
            let faded = min(fadeTailFrames, frames)
            fadeTailFrames = 0
            fadeTail.withUnsafeBufferPointer { output.update(from: $0.baseAddress!, count: faded * channels) }
            var fadeOut = GainRamp(from: 1, to: 0, frames: faded)
            SampleMath.ramp(output, frames: faded, channels: channels, &fadeOut)
            // The rest of the period stays silent; what was queued since starts next period at its time.
            (output + faded * channels).update(repeating: 0, count: (frames - faded) * channels)
            return frames
        }
        guard !ring.isEmpty, let headTime = time(of: headPosition) else {
            if playing {
                playing = false
                statistics.underruns += 1
            }
            return 0
        }
        let nanosecondsPerFrame = 1e9 / Double(rate)
        let error = headTime - startTime
        statistics.offsetMicroseconds = playing ? -error / 1000 : nil
        if playing, abs(error) > Self.resyncNanoseconds {
            // Too far off to slide back: fade out what plays now, then start over at the right frame.
            let faded = ring.read(into: UnsafeMutableBufferPointer(start: output, count: min(fadeFrames, frames) * channels)) / channels
            headPosition += Int64(faded)
            var fadeOut = GainRamp(from: 1, to: 0, frames: faded)
            SampleMath.ramp(output, frames: faded, channels: channels, &fadeOut)
            (output + faded * channels).update(repeating: 0, count: (frames - faded) * channels)
            playing = false
            fadeInPending = true
            correcting = 0
            statistics.resyncs += 1
            return frames
        }
        if playing {
            let errorFrames = error / nanosecondsPerFrame
            if correcting == 0 {
                if errorFrames > Self.correctAboveFrames {
                    correcting = 1
                } else if errorFrames < -Self.correctAboveFrames {
                    correcting = -1
                }
                if correcting != 0 { untilCorrection = Self.correctionInterval / 2 }
            } else if (correcting > 0 && errorFrames < Self.correctBelowFrames)
                || (correcting < 0 && errorFrames > -Self.correctBelowFrames)
            {
                correcting = 0
            }
        }
        var written = 0
        var copiedAny = false
        while written < frames {
            guard !ring.isEmpty else {
                if playing {
                    // Ran dry: the next chunk starts afresh at its own time.
                    playing = false
                    statistics.underruns += 1
                }
                break
            }
            if !playing {
                // Starting: the head goes to the frame of this period that leaves at its time.
                let at = startTime + Double(written) * nanosecondsPerFrame
                guard var lead = time(of: headPosition).map({ $0 - at }) else { break }
                if lead < -nanosecondsPerFrame / 2 {
                    dropLate(Int((-lead / nanosecondsPerFrame).rounded()))
                    guard !ring.isEmpty, let next = time(of: headPosition) else { break }
                    lead = next - at
                }
                let offset = max(0, Int((lead / nanosecondsPerFrame).rounded()))
                guard offset < frames - written else { break }
                (output + written * channels).update(repeating: 0, count: offset * channels)
                written += offset
                playing = true
                correcting = 0
                untilCorrection = Self.correctionInterval
                if fadeInPending {
                    fadeInPending = false
                    fadeIn = GainRamp(from: 0, to: 1, frames: fadeFrames)
                }
            }
            var chunk = frames - written
            if correcting != 0 { chunk = min(chunk, untilCorrection) }
            let boundary = nextBoundary
            if let boundary { chunk = min(chunk, Int(max(0, boundary.frame - headPosition))) }
            if chunk > 0 {
                let copied =
                    ring.read(into: UnsafeMutableBufferPointer(start: output + written * channels, count: chunk * channels))
                    / channels
                if var ramp = fadeIn {
                    SampleMath.ramp(output + written * channels, frames: copied, channels: channels, &ramp)
                    fadeIn = ramp.isDone ? nil : ramp
                }
                written += copied
                headPosition += Int64(copied)
                copiedAny = copiedAny || copied > 0
                if correcting != 0 { untilCorrection -= copied }
            }
            if let boundary, headPosition >= boundary.frame {
                // A chunk dated away from where the last one ends (a gap, or an overlap): past
                // `resyncNanoseconds` it starts at its own time; a smaller step is slid by correction.
                let continued = time(of: headPosition) ?? boundary.time
                advanceRecords()
                if abs(boundary.time - continued) > Self.resyncNanoseconds {
                    playing = false
                    fadeInPending = true
                    statistics.resyncs += 1
                }
                continue
            }
            guard correcting != 0, untilCorrection <= 0, written < frames, !ring.isEmpty else { continue }
            untilCorrection = Self.correctionInterval
            if correcting > 0 {
                // One frame repeated: the head leaves a frame later.
                for channel in 0..<channels {
                    output[written * channels + channel] =
                        written > 0 ? output[(written - 1) * channels + channel] : lastFrame[channel]
                }
                written += 1
                statistics.framesInserted += 1
            } else if ring.discard(channels) == channels {
                headPosition += 1
                statistics.framesDropped += 1
            }
        }
        guard copiedAny else {
            if !playing { statistics.offsetMicroseconds = nil }
            return 0
        }
        (output + written * channels).update(repeating: 0, count: (frames - written) * channels)
        for channel in 0..<channels { lastFrame[channel] = output[(written - 1) * channels + channel] }
        return frames
    }
}
