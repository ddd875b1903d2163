import AudioGateCore
@testable import AudioGateDevices
import AudioGateTestSupport
import Foundation
import Synchronization
import Testing

/// A capture sink that asks for `batchMilliseconds` and records what each call brought, and on
/// which thread (as the kernel names it).
final class BatchingSink: CaptureSink {
    struct Call {
        var frames: Int
        var timestamp: UInt64
        var wall: UInt64 = MonotonicClock.nowNanoseconds()
    }

    let batch: Int
    let calls = Mutex<[Call]>([])
    let rate = Atomic<Int>(0)
    let threadName = Mutex<String?>(nil)

    init(batchMilliseconds: Int) {
        batch = batchMilliseconds
    }

    func captured(_ samples: UnsafeBufferPointer<Float>, frames: Int, format: AudioFormat, timestamp: UInt64) {
        rate.store(format.rate, ordering: .relaxed)
        calls.withLock { $0.append(Call(frames: frames, timestamp: timestamp)) }
        if threadName.withLock({ $0 == nil }) {
            let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?"
            threadName.withLock { $0 = name.trimmingCharacters(in: .whitespacesAndNewlines) }
        }
    }

    func captureStatusChanged(_ status: DeviceStatus) {}

    var batchMilliseconds: Int { batch }
}

@Suite("capture reads in batches", .serialized)
struct CaptureBatchTests {
    /// Runs a capture loop for `seconds` after a short settling time and returns what the sink got.
    static func capture(
        _ opener: DeviceOpener, batchMilliseconds: Int, seconds: Double
    ) async throws -> (calls: [BatchingSink.Call], rate: Int, period: Int, thread: String?, xruns: Int) {
        let sink = BatchingSink(batchMilliseconds: batchMilliseconds)
        let loop = CaptureLoop(opener: opener, sink: sink, logger: .test)
        loop.start()
        // A sound server can take a moment to deliver its first period.
        let started = await Poll.until(seconds: 5) { !sink.calls.withLock { $0.isEmpty } } != nil
        var xruns = loop.monitor.snapshot.xruns
        if started {
            try await Task.sleep(for: .milliseconds(300))
            xruns = loop.monitor.snapshot.xruns
            sink.calls.withLock { $0.removeAll() }
            try await Task.sleep(for: .seconds(seconds))
        }
        xruns = loop.monitor.snapshot.xruns - xruns
        let calls = sink.calls.withLock { $0 }
        let period = loop.monitor.snapshot.negotiated?.periodFrames ?? 0
        await loop.stop()
        try SignalCheckFailure.require(started, "no audio within 5 s of starting the capture loop")
        try SignalCheckFailure.require(calls.count > 1, "\(calls.count) calls in \(seconds) s")
        return (calls, sink.rate.load(ordering: .relaxed), period, sink.threadName.withLock { $0 }, xruns)
    }

    /// Each call starts where the previous one ended (within a capture clock's jitter): batching
    /// loses and repeats nothing.
    static func requireContiguous(_ calls: [BatchingSink.Call], rate: Int) throws {
        var jumps: [Int64] = []
        for (previous, next) in zip(calls, calls.dropFirst()) {
            let expected = previous.timestamp + UInt64(previous.frames) * 1_000_000_000 / UInt64(rate)
            let error = Int64(bitPattern: next.timestamp &- expected)
            if abs(error) > 5_000_000 { jumps.append(error / 1_000_000) }
        }
        try SignalCheckFailure.require(jumps.isEmpty, "\(jumps.count) of \(calls.count) calls did not join on (ms: \(jumps))")
    }

    @Test("on the loopback card, 20 ms batches arrive as two 10 ms periods per wake-up, joined on")
    func loopbackBatches() async throws {
        try await RealTime.retryingOnSteal {
            let batched = try await Self.capture(.loopback(LoopbackCard()), batchMilliseconds: 20, seconds: 1)
            let periods = batched.calls.map { $0.frames / max(batched.period, 1) }.sorted()
            try SignalCheckFailure.require(periods[periods.count / 2] == 2, "median periods per call: \(periods)")
            try SignalCheckFailure.require((40...60).contains(batched.calls.count), "\(batched.calls.count) wake-ups in 1 s")
            let frames = batched.calls.reduce(0) { $0 + $1.frames }
            try SignalCheckFailure.require(
                abs(frames - batched.rate) < batched.rate / 20, "\(frames) frames in 1 s at \(batched.rate) Hz")
            try Self.requireContiguous(batched.calls, rate: batched.rate)

            let single = try await Self.capture(.loopback(LoopbackCard()), batchMilliseconds: 0, seconds: 1)
            // A read takes all that is ready: a period and the few frames that came while the thread woke.
            let sizes = single.calls.map(\.frames).sorted()
            try SignalCheckFailure.require(
                (single.period..<(single.period * 3 / 2)).contains(sizes[sizes.count / 2]), "median \(sizes[sizes.count / 2])")
            try SignalCheckFailure.require(single.calls.count > 80, "\(single.calls.count) wake-ups in 1 s at one period each")
        }
    }

    @Test("on real ALSA (the pulse PCM) a batch threshold is accepted and every frame arrives, in time")
    func alsaBatches() async throws {
        try await RealTime.retryingOnSteal {
            let batched = try await Self.capture(.alsa("pulse"), batchMilliseconds: 20, seconds: 1.5)
            try SignalCheckFailure.require(batched.xruns == 0, "\(batched.xruns) overruns while capturing")
            // Audio read after the first call against the wall clock between first and last call:
            // a read that skipped or repeated periods would be tens of ms off. Capture timestamps
            // are not compared here: under load a sound server's reported delay shifts and the
            // device clock re-anchors (DeviceClockTests cover that), which says nothing of batching.
            let calls = batched.calls
            let frames = calls.dropFirst().reduce(0) { $0 + $1.frames }
            let audio = Double(frames) * 1000 / Double(batched.rate)
            let wall = Double(calls.last!.wall - calls.first!.wall) / 1e6
            try SignalCheckFailure.require(
                abs(audio - wall) <= 30, String(format: "%.0f ms of audio in %.0f ms between the first and last read", audio, wall))
        }
    }

    @Test("a batch is whole periods, at least one, at most half the buffer")
    func wakeFrames() {
        let buffers = DeviceBuffers(
            NegotiatedFormat(format: LoopbackCard.format, periodFrames: 480, bufferFrames: 1920))
        #expect(buffers.wakeFrames(batchMilliseconds: 0) == 480)
        #expect(buffers.wakeFrames(batchMilliseconds: 5) == 480)
        #expect(buffers.wakeFrames(batchMilliseconds: 20) == 960)
        #expect(buffers.wakeFrames(batchMilliseconds: 25) == 960)
        #expect(buffers.wakeFrames(batchMilliseconds: 100) == 960)
        #expect(buffers.wakeFrames(batchMilliseconds: Int.max) == 960)
        #expect(buffers.capacityFrames == 1920)
    }

    @Test("the capture thread carries its name where top -H and debuggers read it")
    func threadName() async throws {
        let result = try await Self.capture(.loopback(LoopbackCard()), batchMilliseconds: 0, seconds: 0.2)
        #expect(result.thread == CaptureLoop.threadName)
        #expect(CaptureLoop.threadName.utf8.count <= 15 && PlaybackLoop.threadName.utf8.count <= 15)
    }
}
