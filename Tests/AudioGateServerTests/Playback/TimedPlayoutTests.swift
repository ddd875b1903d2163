import AudioGateCore
import AudioGateTestSupport
import Foundation
import Testing

@testable import AudioGateServer

/// The timed stream's playout decisions, period by period, against exact times: where a chunk
/// starts, what is dropped when late, how drift is slid back and when it starts over.
@Suite("timed playout")
struct TimedPlayoutTests {
    static let rate = 48000
    static let period = 480
    static let nanosecondsPerFrame = 1e9 / Double(rate)
    static let format = AudioFormat(rate: rate, channels: 1, sampleFormat: .f32le)

    /// Renders `periods` periods, the first leaving the card at `start`; returns the output and the
    /// offset (µs) seen at each period while playing.
    static func render(
        _ playout: inout TimedPlayout, periods: Int, start: Double = 0, every: ((Int, inout TimedPlayout) -> Void)? = nil
    ) -> (output: [Float], offsets: [Double]) {
        var output = [Float](repeating: 0, count: periods * period)
        var offsets: [Double] = []
        output.withUnsafeMutableBufferPointer { output in
            for index in 0..<periods {
                every?(index, &playout)
                let slice = UnsafeMutableBufferPointer(rebasing: output[(index * period)..<((index + 1) * period)])
                let filled = playout.render(
                    into: slice, frames: period, startTime: start + Double(index * period) * nanosecondsPerFrame
                ).filled
                if filled == 0 { slice.update(repeating: 0) }
                if let offset = playout.statistics.offsetMicroseconds { offsets.append(offset) }
            }
        }
        return (output, offsets)
    }

    /// A ramp whose every sample is its own frame number (plus one): what played is readable.
    static func numbered(_ count: Int, from first: Int = 0) -> [Float] {
        (0..<count).map { Float(first + $0 + 1) }
    }

    static func queue(_ playout: inout TimedPlayout, _ samples: [Float], position: Double, time: Double) {
        playout.addRecord(position: position, time: time)
        samples.withUnsafeBufferPointer { _ = playout.write($0) }
    }

    @Test("an early chunk waits and starts at its exact frame")
    func startsAtItsFrame() {
        var playout = TimedPlayout(format: Self.format, limitSeconds: 5)
        Self.queue(&playout, Self.numbered(4800), position: 0, time: 1234 * Self.nanosecondsPerFrame)
        let (output, _) = Self.render(&playout, periods: 20)
        #expect(output.firstIndex { $0 != 0 } == 1234)
        #expect(output[1234] == 1)
        #expect(output[1234 + 4799] == 4800)
        #expect(playout.statistics.lateFrames == 0)
    }

    @Test("a queued chunk retimed 2 ms later starts 96 frames later, the chunk after it too")
    func retimed() {
        var playout = TimedPlayout(format: Self.format, limitSeconds: 5)
        Self.queue(&playout, Self.numbered(480), position: 0, time: 1234 * Self.nanosecondsPerFrame)
        Self.queue(&playout, Self.numbered(480, from: 480), position: 480, time: (1234 + 480) * Self.nanosecondsPerFrame)
        playout.retime(by: 2_000_000)
        let (output, _) = Self.render(&playout, periods: 10)
        #expect(output.firstIndex { $0 != 0 } == 1234 + 96)
        #expect(output[1234 + 96 + 959] == 960)
        #expect(playout.statistics.lateFrames == 0)
    }

    @Test("a late chunk loses what is past and plays the rest on time")
    func lateDropped() {
        var playout = TimedPlayout(format: Self.format, limitSeconds: 5)
        // The first chunk is wholly past, the second's first 100 frames are.
        Self.queue(&playout, Self.numbered(480), position: 0, time: -580 * Self.nanosecondsPerFrame)
        Self.queue(&playout, Self.numbered(960, from: 480), position: 480, time: -100 * Self.nanosecondsPerFrame)
        let (output, _) = Self.render(&playout, periods: 4)
        #expect(output[0] == 581)
        #expect(playout.statistics.lateChunks == 2)
        #expect(playout.statistics.lateFrames == 580)
        #expect(output[859] == 1440)
    }

    /// Chunks whose times run 0.1 % slow or fast against the card: single frames are repeated or
    /// dropped, never more than 0.2 % of them, and the offset stays within a few frames.
    @Test("drift is corrected by single frames", arguments: [1.001, 0.999])
    func drift(stretch: Double) throws {
        var playout = TimedPlayout(format: Self.format, limitSeconds: 5)
        let chunk = 960
        var queued = 0
        let periods = 2000  // 20 s
        let (output, offsets) = Self.render(&playout, periods: periods, start: 0) { _, playout in
            while playout.frames < 9600 {
                let time = 4800 * Self.nanosecondsPerFrame + Double(queued) * Self.nanosecondsPerFrame * stretch
                Self.queue(&playout, Self.numbered(chunk, from: queued), position: Double(queued), time: time)
                queued += chunk
            }
        }
        let statistics = playout.statistics
        let seconds = 19.9
        let expected = 0.001 * seconds * Double(Self.rate)
        let corrections = Double(stretch > 1 ? statistics.framesInserted : statistics.framesDropped)
        #expect(abs(corrections - expected) < expected * 0.1, "corrections \(corrections), expected about \(expected)")
        #expect((stretch > 1 ? statistics.framesDropped : statistics.framesInserted) == 0)
        // Settled after the first second: within 3 frames (62 µs).
        let settled = offsets.dropFirst(100)
        let worst = try #require(settled.map(abs).max())
        #expect(worst < 3 * Self.nanosecondsPerFrame / 1000, "worst offset \(worst) µs")
        #expect(statistics.resyncs == 0 && statistics.lateFrames == 0)
        // Every step in the output is +1 (on time), 0 (a repeated frame) or +2 (a dropped one).
        let played = output.drop { $0 == 0 }
        var previous = played.first!
        var repeats = 0
        var skips = 0
        for value in played.dropFirst() {
            let step = value - previous
            #expect(step == 1 || step == 0 || step == 2, "step \(step) at \(value)")
            if step == 0 { repeats += 1 }
            if step == 2 { skips += 1 }
            previous = value
        }
        #expect(repeats == statistics.framesInserted && skips == statistics.framesDropped)
        // Spread evenly: at most one correction in any 500 frames.
        #expect(Double(max(repeats, skips)) <= Double(played.count) * 0.002 + 1)
    }

    @Test("a chunk dated 80 ms past the last one's end starts at its time with a fade in")
    func gap() {
        var playout = TimedPlayout(format: Self.format, limitSeconds: 5)
        let ones = [Float](repeating: 0.5, count: 4800)
        Self.queue(&playout, ones, position: 0, time: 0)
        // Dated 80 ms after where it would follow on: a gap of 3840 frames.
        Self.queue(&playout, ones, position: 4800, time: (4800 + 3840) * Self.nanosecondsPerFrame)
        let (output, _) = Self.render(&playout, periods: 40)
        #expect(playout.statistics.resyncs == 1)
        #expect(output[4799] == 0.5 && output[4800] == 0)
        let restart = 4800 + 3840
        #expect(output[restart - 1] == 0)
        #expect(output[restart] > 0 && output[restart] < 0.01)
        #expect(output[restart + 240] == 0.5)
        #expect(output[restart + 4799] == 0.5 && output[restart + 4800] == 0)
        #expect(Signal.largestStep(output[(restart - 10)..<(restart + 1000)]) < 0.01)
    }

    @Test("the output clock jumping 80 ms: a fade out, then a fresh start at the right frame with a fade in")
    func resync() {
        var playout = TimedPlayout(format: Self.format, limitSeconds: 5)
        Self.queue(&playout, [Float](repeating: 0.5, count: 48000), position: 0, time: 0)
        var output = Self.render(&playout, periods: 10).output
        // From here the card plays 80 ms earlier than it said: the head is 80 ms early.
        output += Self.render(&playout, periods: 30, start: (4800 - 3840) * Self.nanosecondsPerFrame).output
        #expect(playout.statistics.resyncs == 1)
        #expect(output[4800] > 0.4 && output[4800 + 239] < 0.01 && output[4800 + 240] == 0)
        // 240 frames were faded out; frame 5040 is due 80 ms later, 3840 + 240 frames on.
        let restart = 4800 + 3840 + 240
        #expect(output[restart - 1] == 0)
        #expect(output[restart] > 0 && output[restart] < 0.01)
        #expect(output[restart + 240] == 0.5)
        #expect(Signal.largestStep(output) < 0.01)
    }

    @Test("an empty queue while playing is an underrun; the next chunk starts at its own time")
    func underrun() {
        var playout = TimedPlayout(format: Self.format, limitSeconds: 5)
        Self.queue(&playout, Self.numbered(480), position: 0, time: 0)
        let (first, _) = Self.render(&playout, periods: 2)
        #expect(first[479] == 480 && first[480] == 0)
        #expect(playout.statistics.underruns == 1)
        Self.queue(&playout, Self.numbered(480, from: 480), position: 480, time: 1500 * Self.nanosecondsPerFrame)
        let (second, _) = Self.render(&playout, periods: 4, start: 960 * Self.nanosecondsPerFrame)
        #expect(second.firstIndex { $0 != 0 } == 540)
    }

    @Test("a reset right after the queue ran out on a period's last frame: the next chunk starts at its own time")
    func resetWhenDry() {
        var playout = TimedPlayout(format: Self.format, limitSeconds: 5)
        Self.queue(&playout, Self.numbered(960), position: 0, time: 0)
        _ = Self.render(&playout, periods: 2)
        #expect(playout.playing && playout.isEmpty)
        _ = playout.reset()
        // Nothing was left to fade out: the period plays the next chunk, 100 frames in.
        Self.queue(&playout, Self.numbered(480, from: 960), position: 0, time: 1060 * Self.nanosecondsPerFrame)
        let (output, _) = Self.render(&playout, periods: 2, start: 960 * Self.nanosecondsPerFrame)
        #expect(output.firstIndex { $0 != 0 } == 100)
        #expect(output[100] == 961 && output[579] == 1440)
        #expect(playout.statistics.lateFrames == 0)
    }

    @Test("an underrun during a fade in: the next chunk starts with the rest of that fade")
    func underrunInFadeIn() {
        var playout = TimedPlayout(format: Self.format, limitSeconds: 5)
        Self.queue(&playout, [Float](repeating: 0.5, count: 480), position: 0, time: 0)
        // Dated 80 ms past the first one's end, so it fades in over 240 frames, but only 120 long.
        Self.queue(&playout, [Float](repeating: 0.5, count: 120), position: 480, time: 4320 * Self.nanosecondsPerFrame)
        let first = Self.render(&playout, periods: 10).output
        #expect(playout.statistics.resyncs == 1 && playout.statistics.underruns == 1)
        #expect(abs(first[4320 + 119] - 0.25) < 0.001)
        Self.queue(&playout, [Float](repeating: 0.5, count: 480), position: 600, time: 5000 * Self.nanosecondsPerFrame)
        let second = Self.render(&playout, periods: 2, start: 4800 * Self.nanosecondsPerFrame).output
        #expect(second.firstIndex { $0 != 0 } == 200)
        #expect(abs(second[200] - 0.5 * 121 / 240) < 0.001)
        #expect(second[200 + 119] == 0.5 && second[200 + 479] == 0.5)
        #expect(Signal.largestStep(second[200..<680]) < 0.01)
    }

    @Test("ducking ramps down in 100 ms and back up in 500 ms after the hold")
    func ducker() {
        var ducker = Ducker(depthDecibels: 15)
        var curve = [Float](repeating: 0, count: 480)
        var gains: [Float] = []
        for period in 0..<200 {
            let voice = period >= 10 && period < 60
            let constant = curve.withUnsafeMutableBufferPointer {
                ducker.advance(voiceAudible: voice, frames: 480, rate: 48000, curve: $0.baseAddress!)
            }
            if let constant { gains += [Float](repeating: constant, count: 480) } else { gains += curve }
        }
        let db = gains.map { 20 * log10(Double($0)) }
        #expect(db[10 * 480 - 1] == 0)
        #expect(abs(db[(10 + 10) * 480 - 1] + 15) < 0.01)  // 100 ms after the voice started
        #expect(abs(db[(10 + 9) * 480] + 15) > 0.5)  // still on its way down 90 ms in
        // The last voice period is 59; the hold lasts 250 ms (25 periods), then 500 ms up.
        let release = 59 + 25
        #expect(abs(db[release * 480 - 1] + 15) < 0.01)
        #expect(db[(release + 25) * 480 - 1] > -8 && db[(release + 25) * 480 - 1] < -7)
        #expect(abs(db[(release + 50) * 480 - 1]) < 0.01)
        // No step of the gain is larger than one frame of either ramp.
        var largest: Double = 0
        for index in 1..<db.count { largest = max(largest, abs(db[index] - db[index - 1])) }
        #expect(largest <= 15.0 / 4800 + 1e-6)
    }

    @Test("a reset while playing fades out instead of cutting")
    func resetFades() {
        var playout = TimedPlayout(format: Self.format, limitSeconds: 5)
        Self.queue(&playout, [Float](repeating: 0.5, count: 48000), position: 0, time: 0)
        var output = Self.render(&playout, periods: 5).output
        _ = playout.reset()
        output += Self.render(&playout, periods: 2, start: 2400 * Self.nanosecondsPerFrame).output
        #expect(output[2399] == 0.5)
        #expect(output[2400] > 0.49 && output[2400 + 239] < 0.01 && output[2400 + 240] == 0)
        #expect(Signal.largestStep(output.dropFirst()) < 0.01)
        #expect(playout.isEmpty)
    }

    /// A stream at another rate is resampled on the producer's side; chunks are dated by input
    /// frame, so the resampler's own delay must not move the audio: an impulse at input frame 1000
    /// comes out at 1000 × 48000 / rate frames after the chunk's time.
    @Test("resampled timed audio keeps its time", arguments: [44100, 24000, 16000, 96000])
    func resampledKeepsTime(rate: Int) throws {
        let mixer = PlaybackMixer(configuration: ServerConfiguration(), metrics: ServerMetrics(), logger: TestServer.logger)
        let mix = mixer.mixFormat
        let ingest = try mixer.acquireTimed("timed", role: .music, format: AudioFormat(rate: rate, channels: 1, sampleFormat: .s16le))
        let stream = ingest.stream
        defer { mixer.release(stream) }
        var samples = [Int16](repeating: 0, count: rate / 5)
        samples[1000] = 30000
        // Dated well in the future so nothing is late against the real clock; rendered against it.
        let start = MonotonicClock.nowNanoseconds() + 10_000_000_000
        let presentation = start + 10_000_000
        // In two chunks, the second dated as the continuation of the first.
        let half = samples.count / 2
        #expect(samples[0..<half].withUnsafeBytes { ingest.offer($0, presentedAt: presentation) } == .consumed(half * 2))
        #expect(
            samples[half...].withUnsafeBytes {
                ingest.offer($0, presentedAt: presentation + UInt64(half) * 1_000_000_000 / UInt64(rate))
            } == .consumed((samples.count - half) * 2))
        var output: [Float] = []
        var period = [Float](repeating: 0, count: 480 * mix.channels)
        for index in 0..<30 {
            let time = Double(start) + Double(index * 480) * 1e9 / Double(mix.rate)
            let filled = period.withUnsafeMutableBufferPointer {
                stream.render(
                    into: $0, frames: 480, format: mix, at: PlaybackPeriod(startFrame: UInt64(index * 480), leaveTime: time))
            }
            output += filled == 0 ? [Float](repeating: 0, count: 480) : Signal.channel(period, channels: mix.channels, index: 0)
        }
        let peak = try #require(output.indices.max { abs(output[$0]) < abs(output[$1]) })
        let expected = 480 + 1000 * Double(mix.rate) / Double(rate)
        #expect(abs(Double(peak) - expected) <= 1, "impulse at \(peak), expected \(expected)")
        let statistics = try #require(stream.timing)
        #expect(statistics.lateFrames == 0 && statistics.framesInserted + statistics.framesDropped == 0)
    }
}
