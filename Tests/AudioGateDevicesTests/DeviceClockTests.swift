import Foundation
import Testing

@testable import AudioGateDevices

@Suite("device clock")
struct DeviceClockTests {
    static let rate = 48000
    static let period: UInt64 = 480
    static let start = 1_000_000_000.0

    /// Monotonic time at which frame `frame` is at the card's edge on a device `skew` off nominal.
    static func truth(_ frame: UInt64, skew: Double = 0) -> Double {
        start + Double(frame) * 1e9 / Double(rate) * (1 + skew)
    }

    /// A deterministic generator for jitter.
    struct Noise {
        var state: UInt64 = 12345
        mutating func next(amplitude: Double) -> Double {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return (Double(state >> 11) / Double(1 << 53) * 2 - 1) * amplitude
        }
    }

    @Test("locks onto a device 500 ppm slow within 10 s of 10 ms reports and stays within 50 µs")
    func locksOntoSkew() {
        var clock = DeviceClock(tuning: .playback)
        for report in 0..<3000 {
            let frame = UInt64(report) * Self.period
            clock.update(frame: frame, at: UInt64(Self.truth(frame, skew: 500e-6)), rate: Self.rate)
            guard report >= 1000 else { continue }
            // Dated a buffer ahead, where the mixer asks.
            let ahead = frame + 4 * Self.period
            let error = clock.time(ofFrame: ahead)! - Self.truth(ahead, skew: 500e-6)
            #expect(abs(error) < 50_000, "report \(report): \(error) ns off")
            if abs(error) >= 50_000 { return }
        }
        #expect(clock.bandwidth == DeviceClock.Tuning.playback.bandwidth)
        #expect(clock.anchors == 1)
    }

    @Test("rides out the pulse plugin's sawtooth: reports ±0.3 ms off, dates within 0.03 ms after 5 s")
    func ridesOutSawtooth() {
        var clock = DeviceClock(tuning: .playback)
        var noise = Noise()
        var worst = 0.0
        for report in 0..<6000 {
            let frame = UInt64(report) * Self.period
            // libpulse's interpolated latency ramps between timing updates and steps back at each.
            let sawtooth = Double(report % 37) / 37 * 500_000 - 250_000 + noise.next(amplitude: 50_000)
            clock.update(frame: frame, at: UInt64(Self.truth(frame) + sawtooth), rate: Self.rate)
            if report >= 500 { worst = max(worst, abs(clock.time(ofFrame: frame)! - Self.truth(frame))) }
        }
        #expect(worst < 30_000, "dated up to \(worst) ns off")
    }

    @Test("a thread preempted 5 ms between the delay and the clock read now and then does not move the dates")
    func ridesOutPreemption() {
        var clock = DeviceClock(tuning: .playback)
        var noise = Noise()
        var worst = 0.0
        for report in 0..<6000 {
            let frame = UInt64(report) * Self.period
            let late = (report % 37 == 0 ? 5_000_000 : 0) + noise.next(amplitude: 50_000)
            clock.update(frame: frame, at: UInt64(Self.truth(frame) + late), rate: Self.rate)
            if report >= 500 { worst = max(worst, abs(clock.time(ofFrame: frame)! - Self.truth(frame))) }
        }
        #expect(worst < 30_000, "dated up to \(worst) ns off")
    }

    @Test("capture: reports ±10 ms off give timestamps that advance with the frame count")
    func captureJitterIsSmoothed() {
        var clock = DeviceClock(tuning: .capture)
        var noise = Noise()
        var previous: Double?
        for read in 0..<1000 {
            let first = UInt64(read) * Self.period
            let end = first + Self.period
            clock.update(frame: end, at: UInt64(Self.truth(end) + noise.next(amplitude: 10_000_000)), rate: Self.rate)
            let stamp = clock.time(ofFrame: first)!
            if let previous {
                // Each read moves by one period, give or take what the loop corrects per read.
                #expect(abs(stamp - previous - 10_000_000) < 100_000, "read \(read): step \(stamp - previous) ns")
            }
            previous = stamp
        }
    }

    @Test("a slow wander of a sound server's delivery is averaged out, not followed")
    func wanderIsSmoothed() {
        var clock = DeviceClock(tuning: .capture)
        var worst = 0.0
        for read in 0..<1000 {
            let frame = UInt64(read) * Self.period
            let wander = 6_000_000 * sin(2 * Double.pi * Double(read) / 800)
            clock.update(frame: frame, at: UInt64(Self.truth(frame) + wander), rate: Self.rate)
            worst = max(worst, abs(clock.time(ofFrame: frame)! - Self.truth(frame)))
        }
        #expect(worst < 3_000_000, "followed the wander by \(worst) ns")
    }

    @Test("a jump re-anchors once confirmed; a single late report does not move the dates")
    func reanchorsOnJump() throws {
        var clock = DeviceClock(tuning: .playback)
        var frame: UInt64 = 0
        for _ in 0..<200 {
            frame += Self.period
            clock.update(frame: frame, at: UInt64(Self.truth(frame)), rate: Self.rate)
        }
        // A preemption between the delay and the clock read: one report 25 ms late.
        frame += Self.period
        let before = try #require(clock.time(ofFrame: frame + Self.period))
        clock.update(frame: frame, at: UInt64(Self.truth(frame)) + 25_000_000, rate: Self.rate)
        #expect(clock.time(ofFrame: frame + Self.period) == before)
        #expect(clock.anchors == 1)
        frame += Self.period
        clock.update(frame: frame, at: UInt64(Self.truth(frame)), rate: Self.rate)
        // Audio lost without an error: from now on every report is 40 ms later.
        let confirmations = DeviceClock.Tuning.playback.confirmations
        for step in 0..<confirmations {
            frame += Self.period
            clock.update(frame: frame, at: UInt64(Self.truth(frame)) + 40_000_000, rate: Self.rate)
            #expect(clock.anchors == (step < confirmations - 1 ? 1 : 2))
        }
        // The same run of the device: an echo canceller keeps what it learnt.
        #expect(clock.runs == 1)
        let dated = try #require(clock.time(ofFrame: frame))
        #expect(abs(dated - (Self.truth(frame) + 40_000_000)) < 1)
        #expect(abs(clock.frame(at: UInt64(dated))! - Double(frame)) < 1e-6)
    }

    @Test("a shift moves the line at once and keeps its rate: reports that much later at once are on it")
    func shiftMovesLine() {
        var clock = DeviceClock(tuning: .playback)
        let skew = 300e-6
        for report in 0..<2000 {
            let frame = UInt64(report) * Self.period
            clock.update(frame: frame, at: UInt64(Self.truth(frame, skew: skew)), rate: Self.rate)
        }
        // The frames at the card's edge are now 96 fewer (2 ms) than reported before: the same
        // frame leaves 2 ms later.
        let frame = UInt64(2000) * Self.period
        let before = clock.time(ofFrame: frame)!
        clock.shift(by: 96)
        #expect(abs(clock.time(ofFrame: frame)! - before - 96 * 1e9 / Double(Self.rate) * (1 + skew)) < 1_000)
        var worst = 0.0
        for report in 2000..<3000 {
            let reported = UInt64(report) * Self.period
            let error = clock.update(position: Double(reported) - 96, at: UInt64(Self.truth(reported, skew: skew)), rate: Self.rate)
            worst = max(worst, abs(error))
        }
        #expect(worst < 20_000, "reports up to \(worst) ns off the shifted line")
        #expect(clock.anchors == 1)
    }

    @Test("reset and a rate change forget the dating; the next report anchors")
    func resetForgets() {
        var clock = DeviceClock(tuning: .playback)
        #expect(clock.time(ofFrame: 0) == nil)
        clock.update(frame: 480, at: 1_000_000_000, rate: Self.rate)
        #expect(clock.time(ofFrame: 960) == 1_010_000_000)
        clock.reset()
        #expect(!clock.isAnchored && clock.frame(at: 0) == nil)
        clock.update(frame: 0, at: 5_000_000_000, rate: Self.rate)
        #expect(clock.time(ofFrame: 0) == 5_000_000_000 && clock.anchors == 2 && clock.runs == 2)
        clock.update(frame: 441, at: 5_010_000_000, rate: 44100)
        #expect(clock.time(ofFrame: 441) == 5_010_000_000 && clock.anchors == 3 && clock.rate == 44100 && clock.runs == 3)
    }
}
