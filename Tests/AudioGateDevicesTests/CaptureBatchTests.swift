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
    ) async throws -> (calls: [BatchingSink.Call], rate: Int, period: Int, thread: String?) {
        let sink = BatchingSink(batchMilliseconds: batchMilliseconds)
        let loop = CaptureLoop(opener: opener, sink: sink, logger: .test)
        loop.start()
        // A sound server can take a moment to deliver its first period.
        #expect(await Poll.until(seconds: 5) { !sink.calls.withLock { $0.isEmpty } } != nil)
        try await Task.sleep(for: .milliseconds(300))
        sink.calls.withLock { $0.removeAll() }
        try await Task.sleep(for: .seconds(seconds))
        let calls = sink.calls.withLock { $0 }
        let period = loop.monitor.snapshot.negotiated?.periodFrames ?? 0
        await loop.stop()
        return (calls, sink.rate.load(ordering: .relaxed), period, sink.threadName.withLock { $0 })
    }

    /// Each call starts where the previous one ended (within a capture clock's jitter): batching
    /// loses and repeats nothing.
    static func expectContiguous(_ calls: [BatchingSink.Call], rate: Int) {
        var jumps = 0
        for (previous, next) in zip(calls, calls.dropFirst()) {
            let expected = previous.timestamp + UInt64(previous.frames) * 1_000_000_000 / UInt64(rate)
            let error = abs(Int64(bitPattern: next.timestamp &- expected))
            if error > 5_000_000 { jumps += 1 }
        }
        #expect(jumps == 0, "\(jumps) of \(calls.count) calls did not join on")
    }

    @Test("on the loopback card, 20 ms batches arrive as two 10 ms periods per wake-up, joined on")
    func loopbackBatches() async throws {
        let batched = try await Self.capture(.loopback(LoopbackCard()), batchMilliseconds: 20, seconds: 1)
        let periods = batched.calls.map { $0.frames / max(batched.period, 1) }.sorted()
        #expect(periods[periods.count / 2] == 2, "median periods per call: \(periods)")
        #expect((40...60).contains(batched.calls.count), "\(batched.calls.count) wake-ups in 1 s")
        let frames = batched.calls.reduce(0) { $0 + $1.frames }
        #expect(abs(frames - batched.rate) < batched.rate / 20, "\(frames) frames in 1 s at \(batched.rate) Hz")
        Self.expectContiguous(batched.calls, rate: batched.rate)

        let single = try await Self.capture(.loopback(LoopbackCard()), batchMilliseconds: 0, seconds: 1)
        // A read takes all that is ready: a period and the few frames that came while the thread woke.
        let sizes = single.calls.map(\.frames).sorted()
        #expect((single.period..<(single.period * 3 / 2)).contains(sizes[sizes.count / 2]), "median \(sizes[sizes.count / 2])")
        #expect(single.calls.count > 80, "\(single.calls.count) wake-ups in 1 s at one period each")
    }

    @Test("on real ALSA (the pulse PCM) a batch threshold is accepted and the audio stays whole and joined on")
    func alsaBatches() async throws {
        let batched = try await Self.capture(.alsa("pulse"), batchMilliseconds: 20, seconds: 1.5)
        let frames = batched.calls.reduce(0) { $0 + $1.frames }
        let expected = Int(1.5 * Double(batched.rate))
        #expect(abs(frames - expected) < expected / 10, "\(frames) frames in 1.5 s at \(batched.rate) Hz")
        Self.expectContiguous(batched.calls, rate: batched.rate)
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
