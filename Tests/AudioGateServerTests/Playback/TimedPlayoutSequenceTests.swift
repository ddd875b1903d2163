import AudioGateCore
import Testing

@testable import AudioGateServer

/// One chunk sequence through the timed playout, period by period, compared sample for sample with
/// what the playout rendered when its decisions were taken with flags: an early start, a frame
/// inserted and one dropped for chunks dated a few frames off, an underrun, a late chunk, a gap
/// whose chunk runs dry in the middle of its fade in, the output clock slipping three frames and
/// then jumping 80 ms, a reset while playing and a reset right after the queue emptied on a
/// period's last frame.
///
/// The audio is two channels: the first carries each queued frame's number, the second 1, so a
/// frame of the output says which queued frame played there (first / second) and at what gain
/// (second). The expected runs, statistics and digest were recorded from the render as it was
/// before its phases, when six flags steered it.
@Suite("timed playout sequence")
struct TimedPlayoutSequenceTests {
    static let rate = 48000
    static let period = 480
    static let periods = 46
    static let format = AudioFormat(rate: rate, channels: 2, sampleFormat: .f32le)

    /// When period `index`'s first frame leaves the card, in frames: from period 25 the card runs 3
    /// frames later than before, from period 30 80 ms (3840 frames) later still.
    static func startFrame(_ index: Int) -> Int {
        index * period + (index >= 25 ? 3 : 0) + (index >= 30 ? 3840 : 0)
    }

    static func nanoseconds(_ frames: Int) -> Double { Double(frames) * 1e9 / Double(rate) }

    struct Run {
        var output: [Float]
        var filled: [Int]
        var statistics: TimedPlaybackStatistics
    }

    static func play() -> Run {
        let playout = TimedPlayout(format: format, limitSeconds: 5)
        var numbered = 0
        func queue(_ frames: Int, position: Int, at frame: Int) {
            var samples = [Float](repeating: 1, count: frames * 2)
            for index in 0..<frames { samples[index * 2] = Float(numbered + index + 1) }
            numbered += frames
            playout.addRecord(position: Double(position), time: nanoseconds(frame))
            samples.withUnsafeBufferPointer { _ = playout.write($0) }
        }
        var output = [Float](repeating: 0, count: periods * period * 2)
        var filled: [Int] = []
        for index in 0..<periods {
            switch index {
            case 0:
                // Starts at frame 1234; the third chunk is dated 3 frames late, the fourth back on time.
                queue(960, position: 0, at: 1234)
                queue(960, position: 960, at: 1234 + 960)
                queue(960, position: 1920, at: 1234 + 1920 + 3)
                queue(960, position: 2880, at: 1234 + 2880)
            case 12:
                // After an underrun: a chunk 100 frames late, then one dated 80 ms past its end that
                // is shorter than the fade in.
                queue(960, position: 3840, at: startFrame(12) - 100)
                queue(120, position: 4800, at: startFrame(12) - 100 + 960 + 3840)
            case 23:
                queue(960, position: 4920, at: 11200)
                queue(960, position: 5880, at: 12160)
            case 26:
                queue(9600, position: 6840, at: 13120)
            case 36:
                _ = playout.reset()
            case 37:
                // Ends exactly on period 39's last frame.
                queue(960, position: 0, at: startFrame(38))
            case 40:
                _ = playout.reset()
                queue(960, position: 0, at: startFrame(40) + 100)
            default:
                break
            }
            let count = output.withUnsafeMutableBufferPointer { output in
                let slice = UnsafeMutableBufferPointer(rebasing: output[(index * period * 2)..<((index + 1) * period * 2)])
                let count = playout.render(into: slice, frames: period, startTime: nanoseconds(startFrame(index))).filled
                if count == 0 { slice.update(repeating: 0) }
                return count
            }
            filled.append(count)
        }
        return Run(output: output, filled: filled, statistics: playout.statistics)
    }

    /// The output as runs of frames: `at:0×count` silence, `at:first-last` consecutive queued
    /// frames at full gain, `at:first-last~` the same at another gain (a fade).
    static func runs(_ output: [Float]) -> [String] {
        var runs: [String] = []
        var start = 0
        var first = 0
        var last = 0
        var scaled = false
        func close(at end: Int) {
            guard end > start else { return }
            runs.append(first == 0 ? "\(start):0×\(end - start)" : "\(start):\(first)-\(last)\(scaled ? "~" : "")")
        }
        for frame in 0..<(output.count / 2) {
            let gain = output[frame * 2 + 1]
            let number = gain == 0 ? 0 : Int((output[frame * 2] / gain).rounded())
            let isScaled = number != 0 && gain != 1
            let continues = frame > start && (number == 0 ? first == 0 : first != 0 && number == last + 1 && isScaled == scaled)
            if !continues {
                close(at: frame)
                start = frame
                first = number
                scaled = isScaled
            }
            last = number
        }
        close(at: output.count / 2)
        return runs
    }

    /// FNV-1a over every sample's bits: the gains of the fades, which `runs` only flags.
    static func digest(_ output: [Float]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for sample in output {
            var bits = sample.bitPattern
            for _ in 0..<4 {
                hash = (hash ^ UInt64(bits & 0xff)) &* 0x100_0000_01b3
                bits >>= 8
            }
        }
        return hash
    }

    static let expectedRuns = [
        "0:0×1234", "1234:1-2376", "3610:2376-2876", "4111:2876-3814", "5050:3816-3840", "5075:0×685", "5760:3941-4800",
        "6620:0×3840", "10460:4801-4920~", "10580:0×620", "11200:4921-5039~", "11319:5040-5970", "12250:5972-6471",
        "12750:6473-6972", "13250:6974-8123", "14400:8124-8362~", "14639:0×241", "14880:12444-12682~", "15119:12683-14843",
        "17280:14844-15082~", "17519:0×721", "18240:16441-17400", "19200:0×100", "19300:17401-18360", "20260:0×1820",
    ]
    static let expectedFilled = [
        0, 0, 480, 480, 480, 480, 480, 480, 480, 480, 480, 0, 480, 480, 0, 0, 0, 0, 0, 0, 0, 480, 480, 480, 480, 480, 480,
        480, 480, 480, 480, 480, 480, 480, 480, 480, 480, 0, 480, 480, 480, 480, 480, 0, 0, 0,
    ]
    static let expectedDigest: UInt64 = 0xb01a_d4f4_e41e_9a70
    static let expectedStatistics = {
        var statistics = TimedPlaybackStatistics()
        statistics.framesDropped = 4
        statistics.framesInserted = 2
        statistics.lateChunks = 1
        statistics.lateFrames = 4180
        statistics.resyncs = 2
        statistics.underruns = 3
        statistics.offsetMicroseconds = 0
        return statistics
    }()

    @Test("renders the recorded sequence sample for sample")
    func recordedSequence() {
        let run = Self.play()
        let runs = Self.runs(run.output)
        #expect(runs == Self.expectedRuns, "runs: \(runs)")
        #expect(run.filled == Self.expectedFilled, "filled: \(run.filled)")
        #expect(run.statistics == Self.expectedStatistics, "statistics: \(run.statistics)")
        #expect(Self.digest(run.output) == Self.expectedDigest, "digest: \(String(Self.digest(run.output), radix: 16))")
    }
}
