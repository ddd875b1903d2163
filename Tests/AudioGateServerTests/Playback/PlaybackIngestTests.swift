import AudioGateCore
import AudioGateTestSupport
import Foundation
import Testing

@testable import AudioGateServer

/// The one way into a stream: partial frames, clears, and waiting for room by signal (a task, a
/// thread) without the device thread ever waiting.
@Suite("playback ingest")
struct PlaybackIngestTests {
    static let client = AudioFormat(rate: 48000, channels: 1, sampleFormat: .s16le)
    static let mix = AudioFormat(rate: 48000, channels: 1, sampleFormat: .f32le)

    struct Fixture {
        let stream: PlaybackStream

        init(queueSeconds: Int = 60, maxPendingMarks: Int = 256) throws {
            var configuration = ServerConfiguration()
            configuration.limits.playbackQueueSeconds = queueSeconds
            configuration.limits.maxPendingMarks = maxPendingMarks
            let mixer = PlaybackMixer(configuration: configuration, metrics: ServerMetrics(), logger: TestServer.logger)
            stream = try mixer.acquire("test")
        }

        func ingest(endsAtClear: Bool = false) -> PlaybackIngest {
            PlaybackIngest(stream: stream, format: PlaybackIngestTests.client, mixFormat: { PlaybackIngestTests.mix }, endsAtClear: endsAtClear)
        }

        /// Takes `frames` from the queue as the device thread does; returns the samples.
        @discardableResult
        func play(frames: Int) -> [Float] {
            var scratch = [Float](repeating: 0, count: frames)
            let taken = scratch.withUnsafeMutableBufferPointer {
                stream.render(into: $0, frames: frames, format: PlaybackIngestTests.mix, at: PlaybackPeriod(startFrame: 0))
            }
            return Array(scratch[0..<taken])
        }
    }

    static func pcm(_ samples: [Int16]) -> [UInt8] {
        samples.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] }
    }

    @Test("a partial frame is completed by the next piece, even across a clear by someone else")
    func partialFrameSurvivesForeignClear() async throws {
        let fixture = try Fixture()
        let ingest = fixture.ingest()
        // 0x4000 = 0.5 full scale; the sample's two bytes arrive in two writes with a clear between.
        let bytes = Self.pcm([0x4000, 0x4000])
        #expect(try await ingest.write(Array(bytes[0..<3])))
        fixture.stream.clear()
        #expect(try await ingest.write(Array(bytes[3...]) + Self.pcm([0x4000])))
        #expect(ingest.frames == 3)
        ingest.finish()
        // First the fade of the frame the clear cut off, alone in its period; then what came after.
        #expect(fixture.play(frames: 4800).count == 1)
        let played = fixture.play(frames: 4800)
        #expect(!played.isEmpty)
        // Aligned: every sample is the 0.5 written (a shifted byte would make 0x0040 or 0x4040).
        #expect(played.allSatisfy { abs($0 - 0.5) < 0.01 }, "\(played)")
    }

    @Test("a producer that ends at a clear takes nothing after one; a live one goes on")
    func clearPolicies() async throws {
        let fixture = try Fixture()
        let speech = fixture.ingest(endsAtClear: true)
        let live = fixture.ingest()
        let chunk = Self.pcm([Int16](repeating: 1000, count: 480))
        #expect(try await speech.write(chunk))
        #expect(try await live.write(chunk))
        fixture.stream.clear()
        #expect(try await speech.write(chunk) == false)
        #expect(try await live.write(chunk))
        #expect(fixture.stream.queued.frames == 480)
    }

    @Test("a paused stream renders nothing and keeps its queue and marks; resumed, it plays on from where it was held")
    func pauseKeepsTheQueue() async throws {
        let fixture = try Fixture()
        let ingest = fixture.ingest()
        let ramp = (0..<4800).map { Int16($0) }
        #expect(try await ingest.write(Self.pcm(ramp)))
        let first = fixture.play(frames: 960)
        fixture.stream.setPaused(true)
        #expect(fixture.stream.isPaused)
        #expect(fixture.play(frames: 960).isEmpty)
        #expect(fixture.play(frames: 960).isEmpty)
        #expect(fixture.stream.queued.frames == 4800 - first.count)
        fixture.stream.setPaused(false)
        let rest = fixture.play(frames: 4800)
        // Continuous: the sample after the last one played before the pause, and nothing lost.
        let played = first + rest
        #expect(played.count == 4800)
        let expected = ramp.map { Float($0) / 32768 }
        #expect(zip(played, expected).allSatisfy { abs($0 - $1) < 1e-6 })
        #expect(fixture.stream.underruns == 0)
    }

    @Test("a pause ends with the stream's last listener: what it queued plays out")
    func pauseEndsWithLastListener() throws {
        let fixture = try Fixture()
        let listener = PlaybackListener()
        fixture.stream.addListener(listener)
        fixture.stream.setPaused(true)
        fixture.stream.removeListener(listener)
        #expect(!fixture.stream.isPaused)
    }

    @Test("a task waiting for room is woken by the pull that reaches the low watermark, not before")
    func taskWokenByPull() async throws {
        let fixture = try Fixture(queueSeconds: 1)
        let ingest = fixture.ingest()
        // 1.5 s: one second fits below the high watermark, the rest waits.
        let bytes = Self.pcm([Int16](repeating: 100, count: 72000))
        let writer = Task { try await ingest.write(bytes) }
        #expect(await Poll.until(seconds: 5) { fixture.stream.queued.frames >= 48000 } != nil)
        #expect(ingest.frames < 72000)
        // Still above the low watermark (36000 frames): the writer waits on.
        fixture.play(frames: 9600)
        try await Task.sleep(for: .milliseconds(50))
        #expect(ingest.frames < 72000)
        fixture.play(frames: 9600)
        #expect(try await writer.value)
        #expect(ingest.frames == 72000)
    }

    @Test("a cancelled waiter leaves no registration behind and throws")
    func cancelledWaiter() async throws {
        let fixture = try Fixture(queueSeconds: 1)
        let ingest = fixture.ingest()
        let bytes = Self.pcm([Int16](repeating: 100, count: 72000))
        let writer = Task { try await ingest.write(bytes) }
        #expect(await Poll.until(seconds: 5) { fixture.stream.queued.frames >= 48000 } != nil)
        writer.cancel()
        await #expect(throws: CancellationError.self) { try await writer.value }
        let waiting = fixture.stream.state.withLock { state in
            guard case .queued(let queue) = state.playout else { return true }
            return queue.hasWaiters
        }
        #expect(waiting == false)
    }

    @Test("a producer thread blocks for room and is woken by the pull, or by a cancel")
    func threadWokenByPullOrCancel() async throws {
        let fixture = try Fixture(queueSeconds: 1)
        let ingest = fixture.ingest()
        let samples = [Float](repeating: 0.1, count: 72000)
        let wakeup = ThreadWakeup()
        let cancelled = Locked(false)
        let done = OneShot<Bool>()
        let thread = WorkerThread(name: "test-producer") {
            let queued = samples.withUnsafeBufferPointer { samples in
                try? ingest.writeBlocking(samples, rate: 48000, channels: 1, wakeup: wakeup, isCancelled: { cancelled.value })
            }
            done.fulfill(queued ?? false)
        }
        #expect(await Poll.until(seconds: 5) { fixture.stream.queued.frames >= 48000 } != nil)
        fixture.play(frames: 19200)
        #expect(await done.waitIgnoringCancellation())
        await thread.join()

        let second = OneShot<Bool>()
        let blocked = WorkerThread(name: "test-producer") {
            let queued = samples.withUnsafeBufferPointer { samples in
                (try? ingest.writeBlocking(samples, rate: 48000, channels: 1, wakeup: wakeup, isCancelled: { cancelled.value })) != nil
            }
            second.fulfill(queued)
        }
        #expect(await Poll.until(seconds: 5) { fixture.stream.queued.frames >= 48000 } != nil)
        cancelled.withLock { $0 = true }
        wakeup.signal()
        #expect(await second.waitIgnoringCancellation() == false)
        await blocked.join()
    }

    @Test("a byte queue's writer waits while it is full and is woken when the reader has taken half")
    func byteQueueWakesWriter() async throws {
        let queue = ByteQueue(limit: 1000)
        #expect(queue.offer([UInt8](repeating: 1, count: 1000)))
        let writer = Task { try await queue.write([UInt8](repeating: 2, count: 10)) }
        var buffer = [UInt8](repeating: 0, count: 400)
        _ = buffer.withUnsafeMutableBytes { queue.read(into: $0) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(queue.isReaderGone == false)
        _ = buffer.withUnsafeMutableBytes { queue.read(into: $0) }
        try await writer.value
        queue.finish()
        var total = 0
        while case .bytes(let count) = buffer.withUnsafeMutableBytes({ queue.read(into: $0) }) { total += count }
        #expect(total == 210)
    }

    @Test("a stream holds at most max_pending_marks marks, every producer's together; heard ones make room")
    func marksBounded() async throws {
        let fixture = try Fixture(maxPendingMarks: 3)
        let first = fixture.ingest()
        let second = fixture.ingest()
        let listener = PlaybackListener()
        fixture.stream.addListener(listener)
        #expect(try await first.write(Self.pcm([Int16](repeating: 0x1000, count: 4800))))
        #expect(first.mark("a", listener: listener))
        #expect(second.mark("b", listener: listener))
        #expect(first.mark("c", listener: listener))
        #expect(!second.mark("d", listener: listener), "a fourth mark is refused")
        #expect(fixture.stream.pendingMarks == ["a", "b", "c"])
        first.finish()
        fixture.play(frames: 4800)
        fixture.stream.progress(playedDevice: 1 << 20, rate: 48000)
        #expect(fixture.stream.pendingMarks.isEmpty)
        #expect(first.mark("e", listener: listener), "heard marks make room")
        fixture.stream.removeListener(listener)
        var names: [String] = []
        for await event in listener.events {
            if case .mark(let name) = event { names.append(name) }
        }
        #expect(names == ["a", "b", "c"])
    }
}
