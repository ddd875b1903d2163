import Foundation
@testable import AudioGateDevices
import Testing

@Suite("capture clock")
struct CaptureClockTests {
    static let rate = 48000
    static let period = 480
    static let periodNanoseconds: UInt64 = 10_000_000

    @Test("jittery measurements give timestamps that advance exactly with the frames")
    func jitterIsSmoothed() {
        var clock = CaptureClock()
        var jitter: UInt64 = 12345
        var previous: UInt64?
        for read in 0..<500 {
            // A sound server reports its delay in coarse steps: up to ±10 ms around the truth.
            jitter = jitter &* 6364136223846793005 &+ 1442695040888963407
            let noise = Int64(jitter >> 33) % 20_000_000 - 10_000_000
            let truth = 1_000_000_000 + UInt64(read) * Self.periodNanoseconds
            let stamp = clock.timestamp(
                measured: UInt64(Int64(truth) + noise), frames: Self.period, rate: Self.rate)
            if let previous {
                let step = Int64(stamp) - Int64(previous)
                // Each read moves by one period, plus at most 1% of a 10 ms error.
                #expect(abs(step - Int64(Self.periodNanoseconds)) <= 200_000, "read \(read): step \(step) ns")
            }
            previous = stamp
        }
    }

    @Test("a clock that drifts from the frame count is followed without a jump")
    func driftIsFollowed() {
        var clock = CaptureClock()
        var last: UInt64 = 0
        for read in 0..<2000 {
            // The device runs 0.1% slow against the monotonic clock (a cheap crystal): 20 ms over these 20 s.
            let truth = 1_000_000_000 + UInt64(Double(read) * Double(Self.periodNanoseconds) * 1.001)
            last = clock.timestamp(measured: truth, frames: Self.period, rate: Self.rate)
            if read == 1999 {
                #expect(abs(Int64(last) - Int64(truth)) < 2_000_000, "\(Int64(last) - Int64(truth)) ns behind")
            }
        }
    }

    @Test("a sound server's slow wander of its delivery is averaged out, not followed")
    func wanderIsSmoothed() {
        var clock = CaptureClock()
        var worst: Int64 = 0
        for read in 0..<1000 {
            // The test card's delivery wanders by several ms over seconds around a steady clock.
            let truth = 1_000_000_000 + UInt64(read) * Self.periodNanoseconds
            let wander = 6_000_000 * sin(2 * Double.pi * Double(read) / 800)
            let stamp = clock.timestamp(measured: UInt64(Double(truth) + wander), frames: Self.period, rate: Self.rate)
            worst = max(worst, abs(Int64(stamp) - Int64(truth)))
        }
        #expect(worst < 3_000_000, "timestamps followed the wander by \(worst) ns")
    }

    @Test("a disagreement beyond the resync bound re-anchors on the measurement; reset forgets the anchor")
    func resync() {
        var clock = CaptureClock()
        for read in 0..<10 {
            _ = clock.timestamp(measured: UInt64(read) * Self.periodNanoseconds, frames: Self.period, rate: Self.rate)
        }
        // Audio lost without an error (a sound server dropped it): the measurement runs 150 ms ahead.
        let ahead = 10 * Self.periodNanoseconds + 150_000_000
        #expect(clock.timestamp(measured: ahead, frames: Self.period, rate: Self.rate) == ahead)
        let next = clock.timestamp(measured: ahead + Self.periodNanoseconds, frames: Self.period, rate: Self.rate)
        #expect(next == ahead + Self.periodNanoseconds)

        clock.reset()
        #expect(clock.timestamp(measured: 42, frames: Self.period, rate: Self.rate) == 42)
    }
}
