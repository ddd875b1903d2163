import AudioGateCore
import AudioGateTestSupport
import Foundation
import Testing

@testable import AudioGateDevices

/// Real-time tests on the real ALSA library: the loops play into the test card and capture it back.
@Suite("device loops on real ALSA", .serialized)
struct DeviceLoopTests {
    /// Plays a tone through one loop and captures it through the other, returning the capture.
    func roundTrip(opener: DeviceOpener, frequency: Double, amplitude: Double, seconds: Double) async throws -> (samples: [Float], rate: Int) {
        let source = ToneSource(frequency: frequency, amplitude: amplitude)
        let sink = CollectingSink()
        let playback = PlaybackLoop(opener: opener, source: source, logger: .test)
        let capture = CaptureLoop(opener: opener, sink: sink, logger: .test)
        playback.start()
        capture.start()
        // The first half second holds the pipeline filling up; measure what follows.
        try await Task.sleep(for: .milliseconds(500))
        sink.clear()
        try await Task.sleep(for: .seconds(seconds))
        await capture.stop()
        await playback.stop()
        return (sink.samples, sink.rate)
    }

    func checkTone(_ samples: [Float], rate: Int, frequency: Double, amplitude: Double) throws {
        try SignalCheckFailure.require(samples.count > rate, "captured only \(samples.count) samples")
        let measured = Goertzel.dominantFrequency(samples, rate: rate, near: frequency)
        try SignalCheckFailure.require(abs(measured - frequency) < 1, "tone at \(measured) Hz, expected \(frequency)")
        let expectedDB = 20 * log10(amplitude / 2.0.squareRoot())
        let level = Signal.rmsDBFS(samples)
        try SignalCheckFailure.require(abs(level - expectedDB) < 1, "level \(level) dBFS, expected \(expectedDB)")
        let report = PhaseContinuity.check(samples, frequency: frequency, rate: rate)
        try SignalCheckFailure.require(report.gaps.isEmpty, "gaps at \(report.gaps)")
        try SignalCheckFailure.require(report.isContinuous(maxJump: 0.2), "phase jump \(report.maxPhaseJump) rad at \(report.maxPhaseJumpSample ?? -1)")
    }

    @Test("a 440 Hz tone played through the playback loop comes back through the capture loop")
    func pulseRoundTrip() async throws {
        try await RealTime.retryingOnSteal {
            let (samples, rate) = try await roundTrip(opener: .alsa(TestCard.device), frequency: 440, amplitude: 0.5, seconds: 3)
            #expect(rate == 48000)
            try checkTone(samples, rate: rate, frequency: 440, amplitude: 0.5)
        }
    }

    @Test("the built-in loopback card carries a tone from playback to capture")
    func loopbackRoundTrip() async throws {
        try await RealTime.retryingOnSteal {
            let (samples, rate) = try await roundTrip(opener: .loopback(LoopbackCard()), frequency: 440, amplitude: 0.5, seconds: 2)
            #expect(rate == 48000)
            try checkTone(samples, rate: rate, frequency: 440, amplitude: 0.5)
        }
    }

    @Test("a capture that is not read for longer than its buffer overruns, is counted and recovers")
    func captureXrun() async throws {
        let sink = CollectingSink()
        let capture = CaptureLoop(opener: .alsa(TestCard.device), sink: sink, logger: .test)
        capture.start()
        defer { Task { await capture.stop() } }
        #expect(await Poll.until(seconds: 3) { capture.monitor.snapshot.frames > 4800 } != nil)
        sink.state.withLock { $0.stallMilliseconds = 400 }
        let recovered = await Poll.until(seconds: 5) { capture.monitor.snapshot.xruns >= 1 }
        #expect(recovered != nil, "no xrun counted after a 400 ms stall of a 40 ms buffer")
        let before = capture.monitor.snapshot.frames
        #expect(await Poll.until(seconds: 3) { capture.monitor.snapshot.frames > before + 4800 } != nil)
        #expect(capture.monitor.snapshot.state == .running)
        await capture.stop()
    }

    @Test("a playback thread kept off the CPU between writes for longer than its buffer finds it played out and counts that once; a steady one never does")
    func playbackRanEmpty() async throws {
        let source = ToneSource(frequency: 440, amplitude: 0.2)
        let playback = PlaybackLoop(opener: .loopback(LoopbackCard()), source: source, logger: .test)
        playback.start()
        #expect(await Poll.until(seconds: 3) { playback.monitor.snapshot.frames > 48000 } != nil)
        #expect(playback.monitor.snapshot.ranEmpty == 0, "a freshly started, steadily fed buffer counted as played out")
        source.state.withLock { $0.stallMilliseconds = 200 }
        #expect(await Poll.until(seconds: 3) { playback.monitor.snapshot.ranEmpty >= 1 } != nil, "a 200 ms stall of a 40 ms buffer went unnoticed")
        let frames = playback.monitor.snapshot.frames
        #expect(await Poll.until(seconds: 3) { playback.monitor.snapshot.frames > frames + 24000 } != nil)
        // The loopback card also reports the underrun at the next write, as a hardware card would;
        // the prepare that recovers it empties the buffer, which must not count a second time.
        #expect(playback.monitor.snapshot.ranEmpty == 1)
        #expect(playback.monitor.snapshot.xruns == 1)
        await playback.stop()
    }

    @Test("killing the sound server: both loops report recovering, then running again within 3 s of its return")
    func daemonRestart() async throws {
        let sink = CollectingSink()
        let source = ToneSource(frequency: 440, amplitude: 0.2)
        let capture = CaptureLoop(opener: .alsa(TestCard.device), sink: sink, logger: .test)
        let playback = PlaybackLoop(opener: .alsa(TestCard.device), source: source, logger: .test)
        capture.start()
        playback.start()
        #expect(await Poll.until(seconds: 3) { capture.monitor.snapshot.frames > 4800 && playback.monitor.snapshot.frames > 4800 } != nil)

        TestCard.kill()
        let lost = await Poll.until(seconds: 5) {
            capture.monitor.snapshot.state != .running && playback.monitor.snapshot.state != .running
        }
        #expect(lost != nil, "loops did not notice the sound server going away")

        TestCard.start()
        let back = await Poll.until(seconds: 3) {
            capture.monitor.snapshot.state == .running && playback.monitor.snapshot.state == .running
        }
        #expect(back != nil, "loops not running 3 s after the sound server returned")
        let before = capture.monitor.snapshot.frames
        #expect(await Poll.until(seconds: 3) { capture.monitor.snapshot.frames > before + 4800 } != nil)
        #expect(capture.monitor.snapshot.reopens >= 1)
        #expect(sink.state.withLock { $0.states.contains(.recovering) || $0.states.contains(.unavailable) })
        await capture.stop()
        await playback.stop()
        if !TestCard.isRunning { TestCard.start() }
    }

    @Test("auto opens ALSA default when it works and falls back to loopback when there is no card")
    func autoFallback() throws {
        let card = LoopbackCard()
        #expect(DeviceOpener.resolve("auto", direction: .capture, request: .capture, card: card, logger: .test).name == "default")
        let saved = ProcessInfo.processInfo.environment["PULSE_SERVER"]
        // With its sound server unreachable, ALSA default cannot open: the machine has no card.
        setenv("PULSE_SERVER", "unix:/nonexistent/audiogate", 1)
        defer {
            if let saved { setenv("PULSE_SERVER", saved, 1) } else { unsetenv("PULSE_SERVER") }
        }
        let opener = DeviceOpener.resolve("auto", direction: .capture, request: .capture, card: card, logger: .test)
        #expect(opener.name == LoopbackCard.deviceName)
        let stream = try opener.open(.capture, request: .capture)
        #expect(stream.negotiated.format == LoopbackCard.format)
    }

    @Test("a loop stops promptly even while its device is missing")
    func stopWhileMissing() async throws {
        let capture = CaptureLoop(opener: .alsa("no_such_device_audiogate"), sink: CollectingSink(), logger: .test)
        capture.start()
        #expect(await Poll.until(seconds: 2) { capture.monitor.snapshot.lastError != nil } != nil)
        let start = Date()
        await capture.stop()
        #expect(Date().timeIntervalSince(start) < 1)
        #expect(capture.monitor.snapshot.state != .running)
    }
}
