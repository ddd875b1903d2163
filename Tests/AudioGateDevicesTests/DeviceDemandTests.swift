import AudioGateCore
@testable import AudioGateDevices
import AudioGateTestSupport
import Foundation
import Synchronization
import Testing

/// A capture sink whose listeners the test switches on and off.
final class SwitchedSink: CaptureSink {
    let listening = Atomic<Bool>(false)
    let periods = Atomic<Int>(0)
    let states = Mutex<[DeviceState]>([])

    func captured(_ samples: UnsafeBufferPointer<Float>, frames: Int, format: AudioFormat, timestamp: UInt64) {
        periods.add(1, ordering: .relaxed)
    }

    func captureStatusChanged(_ status: DeviceStatus) {
        states.withLock { $0.append(status.state) }
    }

    var needsDevice: Bool { listening.load(ordering: .relaxed) }
}

@Suite("device demand", .serialized)
struct DeviceDemandTests {
    /// A capture loop on a private loopback card, started, with `idleMilliseconds` of grace.
    static func startedLoop(idleMilliseconds: Int) -> (CaptureLoop, SwitchedSink, DeviceDemand) {
        let sink = SwitchedSink()
        let demand = DeviceDemand(idleMilliseconds: idleMilliseconds)
        let capture = CaptureLoop(opener: .loopback(LoopbackCard()), sink: sink, demand: demand, logger: .test)
        capture.start()
        return (capture, sink, demand)
    }

    @Test("an unused capture device stops after the idle period, reads nothing while parked, and restarts on wake")
    func captureParksAndWakes() async throws {
        let (capture, sink, demand) = Self.startedLoop(idleMilliseconds: 100)
        #expect(await Poll.until(seconds: 3) { capture.monitor.snapshot.state == .idle } != nil)
        let parked = sink.periods.load(ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(300))
        #expect(sink.periods.load(ordering: .relaxed) == parked, "a parked loop still delivered periods")

        sink.listening.store(true, ordering: .relaxed)
        demand.wake()
        #expect(await Poll.until(seconds: 3) { sink.periods.load(ordering: .relaxed) > parked + 20 } != nil)
        #expect(capture.monitor.snapshot.state == .running)
        try await Task.sleep(for: .milliseconds(300))
        #expect(capture.monitor.snapshot.state == .running, "stopped although a client listens")

        sink.listening.store(false, ordering: .relaxed)
        #expect(await Poll.until(seconds: 3) { capture.monitor.snapshot.state == .idle } != nil)
        #expect(sink.states.withLock { $0 }.suffix(3) == [.idle, .running, .idle])
        await capture.stop()
    }

    @Test("a touch keeps the device for one idle period; a stop request ends a parked loop at once")
    func touchAndStop() async throws {
        let (capture, _, demand) = Self.startedLoop(idleMilliseconds: 200)
        #expect(await Poll.until(seconds: 3) { capture.monitor.snapshot.state == .idle } != nil)
        demand.touch()
        #expect(await Poll.until(seconds: 3) { capture.monitor.snapshot.state == .running } != nil)
        #expect(await Poll.until(seconds: 3) { capture.monitor.snapshot.state == .idle } != nil)
        let clock = ContinuousClock()
        let stopped = await clock.measure { await capture.stop() }
        #expect(stopped < .seconds(1), "stopping a parked loop took \(stopped)")
    }

    @Test("idle 0 never stops the device")
    func neverIdle() async throws {
        let (capture, sink, _) = Self.startedLoop(idleMilliseconds: 0)
        try await Task.sleep(for: .milliseconds(400))
        #expect(capture.monitor.snapshot.state == .running)
        #expect(!sink.states.withLock { $0 }.contains(.idle))
        await capture.stop()
    }
}
