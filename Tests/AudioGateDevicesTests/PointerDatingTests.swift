import Testing

@testable import AudioGateDevices

/// A sound server as the `pulse` plugin shows it: every 10 ms the sink renders and every stream's
/// pointer steps by a render, seen here late by a scheduling delay; the delay the plugin reports is
/// the server's interpolated estimate of the speaker's position, with its own wander.
@Suite("pointer dating")
struct PointerDatingTests {
    static let rate = 48000
    static let render: UInt64 = 480
    static let start = 1_000_000_000.0
    static let nominal = 1e9 / Double(rate)

    struct Server {
        /// Frames between the pointer and the speaker.
        var latency = 960.0
        var noise = DeviceClockTests.Noise()
        var dating = PointerDating()
        var clock = DeviceClock(tuning: .playback)

        /// Monotonic time at which device frame `frame` is at the speaker.
        func truth(_ frame: Double) -> Double {
            PointerDatingTests.start + (frame + latency) * PointerDatingTests.nominal
        }

        /// Renders `renders` times; `wander(t)` is the interpolation's error in frames at `t` s, and
        /// `lag(t)` how much later than its render the server's request moves the pointer, in ns.
        mutating func run(
            renders: Range<Int>, wander: (Double) -> Double = { _ in 0 }, lag: (Double) -> Double = { _ in 0 }
        ) {
            for index in renders {
                let pointer = UInt64(index) * PointerDatingTests.render
                let rendered = PointerDatingTests.start + Double(pointer) * PointerDatingTests.nominal
                // Scheduling only ever delays the wake: 50 µs and up to 1 ms more, now and then 3 ms.
                var late = 50_000 + abs(noise.next(amplitude: 1)) * 1_000_000
                if index % 97 == 0 { late += 3_000_000 }
                // Now and then the server asks ahead of its render (a request, not a render, moved the pointer).
                if index % 53 == 26 { late = -9_000_000 }
                let seconds = Double(pointer) / Double(PointerDatingTests.rate)
                let now = rendered + late + lag(seconds)
                let delayed = Double(pointer) - latency + (now - rendered) / PointerDatingTests.nominal
                    + wander(seconds) + noise.next(amplitude: 5)
                // The speaker has not reached frame 0 yet: the plugin reports no delay then.
                guard delayed >= 0 else { continue }
                if let report = dating.observe(
                    pointer: pointer, delayed: { UInt64(delayed.rounded()) }, at: UInt64(now), period: 480, clock: clock,
                    rate: PointerDatingTests.rate)
                {
                    clock.shift(by: report.shift)
                    clock.update(position: report.frame, at: report.time, rate: PointerDatingTests.rate)
                }
            }
        }

        /// Renders through `seconds`, one at a time; returns the worst error at the end of each, in µs.
        mutating func worstError(over seconds: Range<Int>) -> Double {
            var worst = 0.0
            for second in seconds {
                run(renders: second * 100..<(second + 1) * 100)
                worst = max(worst, abs(error(at: UInt64((second + 1) * 100) * PointerDatingTests.render)))
            }
            return worst
        }

        /// How far the clock dates frame `frame` from the truth, in µs.
        func error(at frame: UInt64) -> Double {
            (clock.time(ofFrame: frame)! - truth(Double(frame))) / 1000
        }
    }

    @Test("dates the speaker within 0.1 ms after 5 s though wakes are 50 µs to 4 ms late and some requests 9 ms early")
    func datesThroughSchedulingDelay() {
        var server = Server()
        server.run(renders: 0..<500)
        let worst = server.worstError(over: 5..<30)
        #expect(worst < 100, "dated up to \(worst) µs off")
        #expect(server.clock.anchors == 1)
    }

    /// Runs a server through `seconds` after steady play until they start, with `wander` and `lag`, beside
    /// the same server (the same noise) without them; returns how far apart their dating came, in
    /// µs, and whether the disturbed one re-anchored where the steady one did not.
    static func disturbed(
        seconds: Range<Int>, wander: @escaping (Double) -> Double = { _ in 0 }, lag: @escaping (Double) -> Double = { _ in 0 }
    ) -> (worst: Double, reanchored: Bool) {
        var disturbed = Server()
        var steady = Server()
        disturbed.run(renders: 0..<seconds.lowerBound * 100)
        steady.run(renders: 0..<seconds.lowerBound * 100)
        var worst = 0.0
        for second in seconds {
            disturbed.run(renders: second * 100..<(second + 1) * 100, wander: wander, lag: lag)
            steady.run(renders: second * 100..<(second + 1) * 100)
            let frame = UInt64((second + 1) * 100) * render
            worst = max(worst, abs(disturbed.error(at: frame) - steady.error(at: frame)))
        }
        return (worst, disturbed.clock.anchors != steady.clock.anchors)
    }

    @Test("once its 30 s are full, a bump of 1 ms for 3 s in the interpolated delay moves the dating by under 30 µs")
    func ignoresInterpolationBump() {
        let bump = 0.001 * Double(Self.rate)
        let (worst, _) = Self.disturbed(seconds: 50..<65, wander: { $0 >= 52 && $0 < 55 ? bump : 0 })
        #expect(worst < 30, "moved up to \(worst) µs")
    }

    @Test("once its 30 s are full, the interpolated delay wandering 0.3 ms up and back over 10 s moves the dating by under 60 µs")
    func ignoresInterpolationWander() {
        // A third of the median's readings move with it, which moves the median by a frame or two.
        let peak = 0.0003 * Double(Self.rate)
        let (worst, _) = Self.disturbed(seconds: 50..<65) { t in
            t >= 52 && t < 62 ? peak * (1 - abs(t - 57) / 5) : 0
        }
        #expect(worst < 60, "moved up to \(worst) µs")
    }

    @Test("another stream joining delays the pointer 4-10 ms for 6 s, and leaving 8.5 ms for 0.5 s: the delay dates the speaker meanwhile")
    func followsDelayWhilePointerLags() {
        // As measured with `pacat` joining the test card's sink: 4.2 ms at once, then 1 ms a second
        // more, until one double request catches up; a leave, 8-9 ms for half a second.
        let (worst, reanchored) = Self.disturbed(seconds: 50..<70) { _ in 0 } lag: { t in
            if t >= 52 && t < 58 { return 4_200_000 + (t - 52) * 1_000_000 }
            if t >= 62 && t < 62.5 { return 8_500_000 }
            return 0
        }
        #expect(!reanchored)
        #expect(worst < 100, "moved up to \(worst) µs")
    }

    @Test("the pointer lagging 6 ms from then on, a move of the median, leaves the line where the delay dated it")
    func keepsLineThroughPointerMove() {
        // As two players on one sink showed: one stream's requests fall 6 ms behind the renders
        // and stay there, so after 8 s the median takes the lag as the new constant; the delay
        // dated the speaker all along, so the line is already where the new median puts it.
        let (worst, reanchored) = Self.disturbed(seconds: 50..<75, lag: { t in t >= 52 ? 6_000_000 : 0 })
        #expect(!reanchored)
        #expect(worst < 100, "moved up to \(worst) µs")
    }

    @Test("the interpolation's first 15 s are dropped: a stream 1.8 ms off for its first 14 s is dated right by 25 s")
    func dropsStartTransient() {
        var server = Server()
        let off = 0.002 * Double(Self.rate)
        // 1.8 ms off (under the 2 ms of a real move) for its first 14 s: most of a 30 s median at 25 s.
        let wander: (Double) -> Double = { t in t < 14 ? off * 0.9 : 0 }
        server.run(renders: 0..<2500, wander: wander)
        let error = server.error(at: 2500 * Self.render)
        #expect(abs(error) < 100, "still \(error) µs off at 25 s")
    }

    @Test("a bump of 0.6 ms for 1.5 s just as the first 15 s are dropped moves the dating by under 100 µs")
    func ignoresBumpAtDrop() {
        let bump = -0.0006 * Double(Self.rate)
        let (worst, _) = Self.disturbed(seconds: 14..<30, wander: { $0 >= 15 && $0 < 16.5 ? bump : 0 })
        #expect(worst < 100, "moved up to \(worst) µs")
    }

    @Test("a stream 1.8 ms off until its first 15 s are dropped is dated within 0.15 ms from 6 s after the drop on")
    func correctsProvisionalSoon() {
        var server = Server()
        let off = 0.0018 * Double(Self.rate)
        server.run(renders: 0..<1500, wander: { _ in off })
        server.run(renders: 1500..<2000)
        let worst = server.worstError(over: 20..<30)
        #expect(worst < 150, "up to \(worst) µs off from 21 s")
    }

    @Test("a real move of the server's latency by 5 ms is followed within 12 s, a bump of 3 ms for 5 s is not")
    func followsRealMove() {
        var moved = Server()
        moved.run(renders: 0..<2000)
        moved.latency += 0.005 * Double(Self.rate)
        moved.run(renders: 2000..<3200)
        let error = moved.error(at: 3200 * Self.render)
        #expect(abs(error) < 100, "still \(error) µs off 12 s after the move")
        let bump = 0.003 * Double(Self.rate)
        let (worst, reanchored) = Self.disturbed(seconds: 50..<65, wander: { $0 >= 51 && $0 < 56 ? bump : 0 })
        #expect(!reanchored)
        #expect(worst < 30, "the bump moved the dating by up to \(worst) µs")
    }

    @Test("until the plugin reports a delay the pointer dates the speaker a period ahead; the first delay restarts the line once")
    func datesByPointerUntilFirstDelay() {
        var dating = PointerDating()
        var clock = DeviceClock(tuning: .playback)
        var now: UInt64 = 1_000_000_000
        var restarts = 0
        var reports = 0
        for step in 0..<400 {
            now += 10_000_000
            let pointer = UInt64(step) * 480
            // libpulse's first timing update 2 s into the stream: no delay before it.
            let delayed: UInt64? = step < 200 || pointer < 470 ? nil : pointer - 470
            guard
                let report = dating.observe(
                    pointer: pointer, delayed: { delayed }, at: now, period: 480, clock: clock, rate: 48000)
            else { continue }
            reports += 1
            // The group's earliest step is the one reported.
            let reported = Double((report.time - 1_000_000_000) / 10_000_000 - 1) * 480
            if report.restart {
                restarts += 1
                #expect(report.frame == reported - 470)
                clock.restart(position: report.frame, at: report.time, rate: 48000)
            } else {
                if restarts == 0 { #expect(report.frame == reported - 480) }
                clock.update(position: report.frame, at: report.time, rate: 48000)
            }
        }
        #expect(reports == 15)
        #expect(restarts == 1)
        #expect(clock.runs == 1)
        #expect(dating.latency == 470)
    }

    @Test("a line dating the speaker 5 ms late, so that every step looks early, still hears of them and starts over within 3 s")
    func recoversFromLateLine() {
        var server = Server()
        server.run(renders: 0..<2000)
        let frame = UInt64(2000) * Self.render
        let late = server.truth(Double(frame)) + 5_000_000
        server.clock.restart(position: Double(frame), at: UInt64(late), rate: Self.rate)
        let anchors = server.clock.anchors
        server.run(renders: 2000..<2300)
        #expect(server.clock.anchors == anchors + 1)
        let error = server.error(at: 2300 * Self.render)
        #expect(abs(error) < 200, "still \(error) µs off 3 s later")
    }

    @Test("a pointer that goes back starts over: no report until a new group has closed")
    func startsOverOnPointerBack() {
        var dating = PointerDating()
        let clock = DeviceClock(tuning: .playback)
        var now: UInt64 = 1_000_000_000
        var reports = 0
        for step in 0..<60 {
            now += 10_000_000
            if dating.observe(
                pointer: UInt64(step) * 480, delayed: { UInt64(step) * 480 }, at: now, period: 480, clock: clock, rate: 48000)
                != nil
            {
                reports += 1
            }
        }
        #expect(reports == 2)
        #expect(dating.latency == 0)
        #expect(dating.observe(pointer: 480, delayed: { 0 }, at: now + 10_000_000, period: 480, clock: clock, rate: 48000) == nil)
        #expect(dating.latency == nil)
    }
}
