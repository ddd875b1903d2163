/// Dates playback through a sound server's ALSA plugin (`pulse`) by its buffer pointer, with the
/// server's latency taken from the reported delay over half a minute.
///
/// The plugin's `snd_pcm_delay` is libpulse's interpolated estimate, and each stream's interpolation
/// wanders on its own by tenths of a millisecond for seconds at a time (docs/benchmarks.md), which
/// a delay-locked loop over it follows. Its buffer pointer is not interpolated: it moves when the
/// server takes data from the stream, in the same render for every stream of a sink, and the loop
/// wakes when it moves. So the pointer carries the rate and phase: of each group of steps the one
/// seen earliest against the line (the least delayed by scheduling on the way here) is reported.
/// The delay carries only the constant between the pointer and the speaker (the sink's latency, and
/// the pointer's origin and its phase against the server's requests), read at each report: the
/// median of the last `latencyReports` readings, which the interpolation's bumps of a few seconds
/// do not move. A real move of the latency (the server growing a sink's buffer) of `moveSeconds`
/// or more shows in every reading for `moveReports` groups in a row and restarts the median from
/// them. In a stream's first 10-40 s the interpolation itself is milliseconds off, each stream its
/// own way (docs/benchmarks.md): those readings place the line while they are all there is, as a
/// loop over the delay would, and `provisionalSeconds` after the first report the median narrows to
/// the last `settlingReports` of them, each new reading then pushing out the oldest of those until
/// none is left: the readings that place the line after the drop are never so few that a bump in
/// them is the median, and a provisional median that was off is out-voted within half that. Before
/// its first timing update (up to 2 s into a stream) the plugin reports no delay at all: the pointer
/// alone dates the speaker then, a period ahead of it (the plugin asks the server to request a
/// period at a time, so what it has requested leads what it has played by about that), and the
/// first reading starts the line over.
struct PointerDating: Sendable {
    /// A group of pointer steps this long gives one report.
    static let groupNanoseconds: UInt64 = 250_000_000
    /// The latency is the median of this many groups' readings: 30 s.
    static let latencyReports = 120
    /// Readings this far from the median on one side, `moveReports` in a row, are a real move.
    static let moveSeconds = 0.002
    static let moveReports = 32
    /// A step this much earlier than the group's median is not a render seen late but a request
    /// made early (the server asking ahead of its render): it is left out of the group's choice.
    static let earlyNanoseconds = 2_000_000.0
    /// At most this many steps in a group are weighed (a 10 ms render gives 25).
    static let groupCapacity = 64
    /// The median starts over this long after the stream's first report.
    static let provisionalSeconds = 15.0
    /// At the drop the median keeps this many readings, the provisional ones giving way one by one.
    static let settlingReports = 32
    /// A move of the median this large at once is the constant changing, not its wobble.
    static let shiftSeconds = 0.00025
    /// The pointer dates a report unless it is this far from the line and the delay is nearer.
    static let pointerTrustNanoseconds = 1_000_000.0

    /// The group's steps so far, each against the line, and a scratch copy of their errors.
    private var steps: [Step]
    private var errors: [Double]
    private var stepCount = 0
    private typealias Step = (error: Double, pointer: UInt64, latency: Double?, time: UInt64)
    private var groupStart: UInt64 = 0
    private var lastPointer: UInt64?
    /// The last `latencyReports` readings of pointer minus delayed position, oldest overwritten.
    private var latencies: [Double]
    private var sorted: [Double]
    private var latencyCount = 0
    private var latencyNext = 0
    /// Readings in a row beyond `moveSeconds` from the median, and on which side.
    private var moved = 0
    private var movedAbove = false
    /// Provisional readings still in the window after the drop, each pushed out by the next reading.
    private var provisional = 0
    /// When the first group closed since the reset, and whether the median has started over since.
    private var firstReport: UInt64?
    private var settled = false
    /// The median of `latencies`, in frames; nil before the first group closes.
    private(set) var latency: Double?

    init() {
        latencies = Array(repeating: 0, count: Self.latencyReports)
        sorted = latencies
        steps = Array(repeating: (0, 0, nil, 0), count: Self.groupCapacity)
        errors = Array(repeating: 0, count: Self.groupCapacity)
    }

    /// Forgets the pointer and the latency (a reopen, an xrun, a restart after idling).
    mutating func reset() {
        stepCount = 0
        lastPointer = nil
        latencyCount = 0
        latencyNext = 0
        moved = 0
        provisional = 0
        firstReport = nil
        settled = false
        latency = nil
    }

    /// One read of the plugin, right after the loop woke: `pointer` is the frames the server has
    /// taken at `now`; `delayed` reads the frames written less the delay (nil while the plugin
    /// reports none), asked only when the pointer moved; `period` is the frames the server requests
    /// at a time. Returns the report for the clock (a fractional device frame and its time) when a
    /// group closes, whether it starts the line over, and by how many frames to move the line at
    /// once (`DeviceClock.shift`), where the loop, pulling in a step, would overshoot: when the
    /// median latency moved by `shiftSeconds` or more, as far as the line is from the pointer's
    /// dating by the new median, and only when that too is `shiftSeconds` or more. A median that
    /// moved because the delay's readings came right (the drop) finds the line off by the move; one
    /// that moved because the pointer fell behind the renders finds the line already there, the
    /// delay having dated the speaker meanwhile (`nearer`). A smaller move is the median's wobble.
    mutating func observe(
        pointer: UInt64, delayed: () -> UInt64?, at now: UInt64, period: Int, clock: DeviceClock, rate: Int
    ) -> (frame: Double, time: UInt64, restart: Bool, shift: Double)? {
        defer { lastPointer = pointer }
        // Only a moved pointer dates anything: a read between the server's requests shows a step
        // already past, by however long ago.
        guard let lastPointer, pointer != lastPointer else { return nil }
        guard pointer > lastPointer else {
            reset()
            return nil
        }
        let position = Double(pointer)
        let nominal = 1e9 / Double(rate)
        let expected = clock.time(ofPosition: position - (latency ?? Double(period))) ?? position * nominal
        let error = Double(now) - expected
        let reading = delayed().map { position - Double($0) }
        if stepCount == 0 { groupStart = now }
        if stepCount < Self.groupCapacity {
            steps[stepCount] = (error, pointer, reading, now)
            stepCount += 1
        }
        guard now &- groupStart >= Self.groupNanoseconds else { return nil }
        let chosen = earliest()
        stepCount = 0
        let first = firstReport ?? chosen.time
        firstReport = first
        if !settled, Double(chosen.time &- first) >= Self.provisionalSeconds * 1e9 {
            settled = true
            restartWindow(keeping: Self.settlingReports)
            provisional = latencyCount
        }
        let before = latency
        if let reading = chosen.latency { record(reading, rate: rate) }
        var shift = 0.0
        let least = Self.shiftSeconds * Double(rate)
        if let before, let latency, abs(latency - before) >= least,
            let lineTime = clock.time(ofPosition: Double(chosen.pointer) - latency)
        {
            let off = (Double(chosen.time) - lineTime) / nominal
            if abs(off) >= least { shift = off }
        }
        return (
            Self.nearer(pointer: chosen.pointer, latency: latency ?? Double(period), reading: chosen.latency, at: chosen.time, clock: clock),
            chosen.time, before == nil && latency != nil && clock.isAnchored, shift
        )
    }

    /// The frame the step dates: by the pointer less the median latency, unless that is
    /// `pointerTrustNanoseconds` or more from the line and the delay read with it is nearer. Each
    /// is milliseconds off now and then and never both at once: another stream joining or leaving
    /// the sink delays the server's requests (the pointer) by 4-10 ms for seconds while the delay,
    /// which libpulse dates from the server's own timing, stays on the line; the interpolated delay
    /// wanders by tenths of a millisecond for seconds and bumps by up to a millisecond while the
    /// pointer keeps the render's pace. Within a millisecond of the line the nearer of the two is
    /// a toss of their noise, and taking it would let the delay's wander pull the line along.
    private static func nearer(
        pointer: UInt64, latency: Double, reading: Double?, at time: UInt64, clock: DeviceClock
    ) -> Double {
        let byPointer = Double(pointer) - latency
        guard let reading, let pointerTime = clock.time(ofPosition: byPointer) else { return byPointer }
        let now = Double(time)
        guard abs(now - pointerTime) >= pointerTrustNanoseconds else { return byPointer }
        let byDelay = Double(pointer) - reading
        guard let delayTime = clock.time(ofPosition: byDelay) else { return byPointer }
        return abs(now - delayTime) < abs(now - pointerTime) ? byDelay : byPointer
    }

    /// The group's earliest step against the line, leaving out any more than `earlyNanoseconds`
    /// before the group's median (judged against the group, not the line, so that a line that is
    /// itself off still hears of every step).
    private mutating func earliest() -> Step {
        let count = stepCount
        let steps = self.steps
        let median = Self.median(count, of: { steps[$0].error }, scratch: &errors, upper: true)
        var chosen = steps[0]
        var found = false
        for index in 0..<count where steps[index].error >= median - Self.earlyNanoseconds {
            if !found || steps[index].error < chosen.error {
                chosen = steps[index]
                found = true
            }
        }
        return chosen
    }

    private mutating func record(_ reading: Double, rate: Int) {
        if let latency, abs(reading - latency) > Self.moveSeconds * Double(rate) {
            let above = reading > latency
            moved = moved > 0 && above == movedAbove ? moved + 1 : 1
            movedAbove = above
        } else {
            moved = 0
        }
        append(reading)
        if provisional > 0 {
            // The oldest reading is the one `latencyCount` back from the next slot: counting it out drops it.
            latencyCount -= 1
            provisional -= 1
        }
        if moved >= Self.moveReports { restartWindow(keeping: Self.moveReports) }
        updateMedian()
    }

    /// Keeps only the last `count` readings: those since a move began.
    private mutating func restartWindow(keeping count: Int) {
        let kept = min(count, latencyCount)
        for index in 0..<kept {
            sorted[index] = latencies[(latencyNext - kept + index + Self.latencyReports) % Self.latencyReports]
        }
        for index in 0..<kept { latencies[index] = sorted[index] }
        latencyCount = kept
        latencyNext = kept % Self.latencyReports
        moved = 0
        provisional = 0
    }

    private mutating func append(_ reading: Double) {
        latencies[latencyNext] = reading
        latencyNext = (latencyNext + 1) % Self.latencyReports
        latencyCount = min(latencyCount + 1, Self.latencyReports)
    }

    private mutating func updateMedian() {
        let latencies = self.latencies
        let oldest = latencyNext - latencyCount + Self.latencyReports
        latency = Self.median(
            latencyCount, of: { latencies[(oldest + $0) % Self.latencyReports] }, scratch: &sorted, upper: false)
    }

    /// The median of the `count` values `value(0..<count)`, sorted in `scratch` so that the device
    /// thread allocates nothing; of two middle values, the upper one (`upper`) or their mean.
    private static func median(
        _ count: Int, of value: (Int) -> Double, scratch: inout [Double], upper: Bool
    ) -> Double {
        scratch.withUnsafeMutableBufferPointer { target in
            for index in 0..<count { target[index] = value(index) }
            var window = UnsafeMutableBufferPointer(rebasing: target[0..<count])
            window.sort()
            return upper || count % 2 == 1 ? window[count / 2] : (window[count / 2 - 1] + window[count / 2]) / 2
        }
    }
}
