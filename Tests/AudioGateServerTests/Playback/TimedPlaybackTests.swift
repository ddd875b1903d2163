import AudioGateCore
import AudioGateTestSupport
import Foundation
import Testing

@testable import AudioGateServer

/// Timed streams on the test card: each chunk leaves the card at its presentation time, checked
/// against the recording of the speaker's monitor.
@Suite("timed playback", .serialized, .timeLimit(.minutes(2)))
struct TimedPlaybackTests {
    static let rate = 48000
    static let format = AudioFormat(rate: rate, channels: 1, sampleFormat: .s16le)
    static let chunkFrames = 960

    /// Queues `samples` in 20 ms chunks, chunk `k` dated `start + k * 20 ms * stretch`.
    @discardableResult
    static func enqueue(
        _ samples: [Float], on ingest: PlaybackIngest, start: UInt64, stretch: Double = 1, firstChunk: Int = 0
    ) -> Int {
        let pcm = samples.map { Int16(max(-32767, min(32767, ($0 * 32767).rounded()))) }
        var accepted = 0
        var offset = 0
        var index = firstChunk
        while offset < pcm.count {
            let end = min(pcm.count, offset + chunkFrames)
            let time = start + UInt64(Double(index * chunkFrames) * 1e9 / Double(rate) * stretch)
            let offer = pcm[offset..<end].withUnsafeBytes { ingest.offer($0, presentedAt: time) }
            if offer == .consumed((end - offset) * MemoryLayout<Int16>.size) { accepted += 1 }
            offset = end
            index += 1
        }
        return accepted
    }

    static func milliseconds(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1e6 }

    /// Waits for the sink's timing to settle. The monitor reader that just started lowers the null
    /// sink's latency (10 to 5 ms), and the pulse plugin's reported delay, which the server dates
    /// its output by, wanders by 1-2 ms in a new stream's first 10-15 s: libpulse's latency smoother
    /// converges on timing updates 1.5 s apart. The server rightly follows what the device reports,
    /// so measurements of when audio leaves start after that.
    static func settle() async throws {
        try await Task.sleep(for: .seconds(15))
    }

    /// When the server dates device frame 0 now, in milliseconds (nil before the first write): from
    /// the frame it dates at the card's edge now, at the nominal rate, so that the figure moves only
    /// as far as the date of the frames playing moves.
    static func outputEpochMs(_ server: AudioGateServer) -> Double? {
        let now = MonotonicClock.nowNanoseconds()
        return server.engine.mixer.deviceClock.withLock { clock in
            clock.frame(at: now).map { (Double(now) - $0 * 1e9 / Double(clock.rate)) / 1e6 }
        }
    }

    /// The same, read at monotonic time `nanoseconds`.
    static func outputEpochMs(_ server: AudioGateServer, at nanoseconds: UInt64) async throws -> Double {
        try await Task.sleep(for: .nanoseconds(nanoseconds - min(nanoseconds, MonotonicClock.nowNanoseconds())))
        guard let epoch = outputEpochMs(server) else { throw SignalCheckFailure("the output was never dated") }
        return epoch
    }

    /// The card's buffer found played out or underrun so far: each shifts the output by its gap.
    static func holes(_ server: AudioGateServer) -> Int {
        let status = server.engine.playback.monitor.snapshot
        return status.ranEmpty + status.xruns
    }

    /// What the monitor's timing allows: the null sink hands audio to its monitor when it renders
    /// it, up to the sink's latency before PulseAudio counts it as played (what `snd_pcm_delay`
    /// reports, the time the mixer aims at). The monitor reader asks for 5 ms, which sets that
    /// latency (`pactl list sinks` shows "configured 4988 usec" while it records), so a frame on
    /// time is heard from 5 ms early to on time; 1 ms more either side for the reader's own dating.
    static let onTime = -6.0...1.0

    @Test("a tone starts at its presentation time, at its pitch, without a gap")
    func startsOnTime() async throws {
        try await PlaybackServer.live { server, _, monitor in
            let ingest = try server.engine.mixer.acquireTimed("timed", role: .music, format: Self.format)
            let stream = ingest.stream
            defer { server.engine.mixer.release(stream) }
            let holesBefore = Self.holes(server)
            try await Self.settle()
            let start = MonotonicClock.nowNanoseconds() + 400_000_000
            Self.enqueue(Signal.sine(frequency: 440, rate: Self.rate, seconds: 1, amplitude: 0.5), on: ingest, start: start)
            let epochAtStart = try await Self.outputEpochMs(server, at: start)
            let epochAtEnd = try await Self.outputEpochMs(server, at: start + 1_000_000_000)
            try await Task.sleep(for: .milliseconds(700))
            monitor.stop()
            let samples = monitor.samples
            let tone = try PlaybackAnalysis.singleTone(samples, frequency: 440, expectedMs: 1000, toleranceMs: 2)
            let onsetError = monitor.time(ofSample: tone.lowerBound) - Self.milliseconds(start)
            let report = PhaseContinuity.check(samples, frequency: 440, rate: PlaybackMonitor.rate)
            let statistics = try #require(stream.timing)
            RealTime.log(
                String(format: "timed onset %+.2f ms from its presentation time; phase jump %.3f rad; %@", onsetError,
                       report.maxPhaseJump, "\(statistics); card buffer holes \(Self.holes(server) - holesBefore)"))
            try SignalCheckFailure.require(Self.onTime.contains(onsetError), "the tone started \(onsetError) ms from its time")
            try SignalCheckFailure.require(report.gaps.isEmpty && report.isContinuous(maxJump: 0.1), "\(report)")
            #expect(statistics.lateChunks == 0 && statistics.resyncs == 0)
            // Single frames only as far as the card's date moved during the tone (see the drift test).
            let clockFrames = abs(epochAtEnd - epochAtStart) * Double(Self.rate) / 1000
            #expect(Double(statistics.framesInserted + statistics.framesDropped) <= 2 + clockFrames.rounded(.up))
        }
    }

    @Test("late chunks are dropped; what is still due plays at its time")
    func lateDropped() async throws {
        try await PlaybackServer.live { server, _, monitor in
            let ingest = try server.engine.mixer.acquireTimed("timed", role: .music, format: Self.format)
            let stream = ingest.stream
            defer { server.engine.mixer.release(stream) }
            let holesBefore = Self.holes(server)
            try await Self.settle()
            // Dated 200 ms ago: the first 10 chunks are past already, the next ones due within the
            // card's latency are late when the mixer reaches them.
            let start = MonotonicClock.nowNanoseconds() - 200_000_000
            let accepted = Self.enqueue(
                Signal.sine(frequency: 440, rate: Self.rate, seconds: 1, amplitude: 0.5), on: ingest, start: start)
            try await Task.sleep(for: .milliseconds(1200))
            monitor.stop()
            let samples = monitor.samples
            let statistics = try #require(stream.timing)
            let end = Self.milliseconds(start) + 1000
            guard let tone = PlaybackAnalysis.segments(samples).last else { throw SignalCheckFailure("nothing heard") }
            let endError = monitor.time(ofSample: tone.upperBound) - end
            RealTime.log(String(format: "late start: tone ended %+.2f ms from its time; %@", endError, "\(statistics); card buffer holes \(Self.holes(server) - holesBefore)"))
            #expect(accepted == 50)
            try SignalCheckFailure.require(statistics.lateChunks >= 10 && statistics.lateChunks <= 14, "late chunks \(statistics.lateChunks)")
            try SignalCheckFailure.require(statistics.lateFrames >= 200 * 48 && statistics.lateFrames <= 270 * 48, "late frames \(statistics.lateFrames)")
            try SignalCheckFailure.require(Self.onTime.contains(endError), "the tone ended \(endError) ms from its time")
            try SignalCheckFailure.require(PlaybackAnalysis.segments(samples).count == 1, "\(PlaybackAnalysis.segments(samples).count) segments heard")
        }
    }

    /// Chunks dated 0.1 % slow against the card, fed in real time: single frames are repeated,
    /// about 48 a second, the offset stays within a few frames and the tone has no jump larger
    /// than one frame's phase.
    ///
    /// The count is checked against the card as the server dates it. Through the pulse plugin that
    /// date wanders by up to a millisecond in a new stream's first 10-15 s (libpulse's latency
    /// smoother converging on timing updates 1.5 s apart), and now and then by half of one later;
    /// the server rightly follows what the device reports, so every millisecond the date moved is
    /// 48 frames more or fewer to correct.
    @Test("drift of 0.1 % is corrected by single frames", arguments: [1.001, 0.999])
    func drift(stretch: Double) async throws {
        try await PlaybackServer.live { server, _, monitor in
            let ingest = try server.engine.mixer.acquireTimed("timed", role: .music, format: Self.format)
            let stream = ingest.stream
            defer { server.engine.mixer.release(stream) }
            let holesBefore = Self.holes(server)
            try await Self.settle()
            let seconds = 8.0
            let tone = Signal.sine(frequency: 440, rate: Self.rate, seconds: seconds, amplitude: 0.5)
            let start = MonotonicClock.nowNanoseconds() + 300_000_000
            let end = start + UInt64(seconds * stretch * 1e9)
            var offsets: [Double] = []
            var epochAtStart: Double?
            // Fed 200 ms ahead, as a network player would be.
            let chunkSamples = Self.chunkFrames
            var chunk = 0
            while chunk * chunkSamples < tone.count {
                let due = start + UInt64(Double(chunk * chunkSamples) * 1e9 / Double(Self.rate) * stretch)
                let now = MonotonicClock.nowNanoseconds()
                if epochAtStart == nil, now >= start { epochAtStart = Self.outputEpochMs(server) }
                if due > now + 200_000_000 {
                    try await Task.sleep(for: .milliseconds(10))
                    if let offset = stream.timing?.offsetMicroseconds { offsets.append(offset) }
                    continue
                }
                let piece = Array(tone[(chunk * chunkSamples)..<min(tone.count, (chunk + 1) * chunkSamples)])
                Self.enqueue(piece, on: ingest, start: start, stretch: stretch, firstChunk: chunk)
                chunk += 1
            }
            let epochAtEnd = try await Self.outputEpochMs(server, at: end)
            try await Task.sleep(for: .milliseconds(500))
            monitor.stop()
            let samples = monitor.samples
            let statistics = try #require(stream.timing)
            let report = PhaseContinuity.check(samples, frequency: 440, rate: PlaybackMonitor.rate)
            let settled = offsets.dropFirst(100)  // after a second
            let worst = settled.map(abs).max() ?? .infinity
            guard let epochAtStart else { throw SignalCheckFailure("the output was never dated") }
            // Frame 0 dated later means every frame leaves later than planned: frames to drop.
            let clockFrames = (epochAtEnd - epochAtStart) * Double(Self.rate) / 1000
            let expected = 0.001 * seconds * Double(Self.rate) + (stretch > 1 ? -clockFrames : clockFrames)
            let corrections = Double(stretch > 1 ? statistics.framesInserted : statistics.framesDropped)
            guard let heard = PlaybackAnalysis.segments(samples).first else { throw SignalCheckFailure("nothing heard") }
            let heardMs = PlaybackAnalysis.milliseconds(heard.count)
            RealTime.log(
                String(format: "drift %.3f: %.0f corrections (expected %.0f with the output dated %+.0f µs later), worst offset %.0f µs, heard %.1f ms, phase jump %.3f rad; %@",
                       stretch, corrections, expected, (epochAtEnd - epochAtStart) * 1000, worst, heardMs, report.maxPhaseJump,
                       "\(statistics); card buffer holes \(Self.holes(server) - holesBefore)"))
            // The offset may lag the last few corrections by up to the bound below (7 frames).
            try SignalCheckFailure.require(abs(corrections - expected) <= 12, "\(corrections) corrections, \(expected) expected")
            try SignalCheckFailure.require(worst < 150, "offset reached \(worst) µs")
            try SignalCheckFailure.require(abs(heardMs - seconds * stretch * 1000) < 3, "heard \(heardMs) ms")
            // A repeated or dropped frame shifts a 440 Hz tone's phase by 0.058 rad; corrections come
            // at most every 500 frames, so two 10 ms windows 5 ms apart differ by at most two of them.
            try SignalCheckFailure.require(report.gaps.isEmpty && report.isContinuous(maxJump: 0.14), "\(report)")
            #expect(statistics.resyncs == 0 && statistics.lateChunks == 0)
        }
    }

    @Test("a chunk dated 80 ms after the last one's end plays at its own time, fading in")
    func resync() async throws {
        try await PlaybackServer.live { server, _, monitor in
            let ingest = try server.engine.mixer.acquireTimed("timed", role: .music, format: Self.format)
            let stream = ingest.stream
            defer { server.engine.mixer.release(stream) }
            let holesBefore = Self.holes(server)
            try await Self.settle()
            let start = MonotonicClock.nowNanoseconds() + 300_000_000
            let first = Signal.sine(frequency: 440, rate: Self.rate, seconds: 0.5, amplitude: 0.5)
            Self.enqueue(first, on: ingest, start: start)
            // The second half second is dated 80 ms after where it would follow on.
            let secondStart = start + 580_000_000
            Self.enqueue(Signal.sine(frequency: 440, rate: Self.rate, seconds: 0.5, amplitude: 0.5), on: ingest, start: secondStart)
            try await Task.sleep(for: .milliseconds(1300))
            monitor.stop()
            let samples = monitor.samples
            let statistics = try #require(stream.timing)
            let segments = PlaybackAnalysis.segments(samples)
            RealTime.log("resync: \(segments.map { PlaybackAnalysis.milliseconds($0.count) }) ms; \(statistics); card buffer holes \(Self.holes(server) - holesBefore)")
            #expect(statistics.resyncs == 1)
            try SignalCheckFailure.require(segments.count == 2, "heard \(segments.count) segments")
            let secondError = monitor.time(ofSample: segments[1].lowerBound) - Self.milliseconds(secondStart)
            try SignalCheckFailure.require(Self.onTime.contains(secondError), "the second part started \(secondError) ms from its time")
            let gapMs = PlaybackAnalysis.milliseconds(segments[1].lowerBound - segments[0].upperBound)
            try SignalCheckFailure.require(abs(gapMs - 80) < 2, "gap \(gapMs) ms")
            // The fade in: no step at the second part's start larger than the tone's own.
            try SignalCheckFailure.require(Signal.largestStep(samples[(segments[1].lowerBound - 48)..<(segments[1].lowerBound + 480)]) < 0.05, "a step at the second part's start")
        }
    }
}
