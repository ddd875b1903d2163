import Testing

@testable import AudioGateServer

/// What the timeline hands back as the card plays: each mark to the listener that placed it, once
/// heard; `drained` to every listener once everything is; latency spans ending at the probe's
/// device frame.
@Suite("playback timeline")
struct PlaybackTimelineTests {
    static let rate = 48000

    @Test("heard marks go to their listener, drained to all, probes as spans to the frame heard")
    func progressSends() throws {
        var timeline = PlaybackTimeline()
        _ = timeline.queued(960, at: 0)
        let placed = [
            timeline.addMark("first", listener: 1, at: 480, limit: 8, queueEmpty: false),
            timeline.addMark("second", listener: 2, at: 960, limit: 8, queueEmpty: false),
        ]
        #expect(placed == [true, true])
        timeline.addProbe(position: 100, startNanoseconds: 5_000)
        #expect(timeline.pendingMarkNames == ["first", "second"])

        // Stream frames 0-479 go out as device frames 1000-1479; the probe's frame is device frame 1100.
        timeline.rendered(480, of: 480, startFrame: 1000)
        let early = timeline.progress(playedDevice: 1099, rate: Self.rate, queueEmpty: false)
        #expect(early.sends.map(\.event) == [.started] && early.sends.map(\.listener) == [nil] && early.latencies.isEmpty)
        let first = timeline.progress(playedDevice: 1480, rate: Self.rate, queueEmpty: false)
        #expect(first.sends.map(\.listener) == [1])
        #expect(first.sends.map(\.event) == [.mark(name: "first")])
        #expect(first.clearToSilence == nil)
        // Read 1 ms after the card reached frame 1480: frame 1100 was heard 380 frames (7.917 ms) before.
        let span = try #require(first.latencies.first)
        #expect(first.latencies.count == 1)
        #expect(span.nanoseconds(at: 5_000 + 10_000_000) == 10_000_000 - 380 * 1_000_000_000 / 48000)
        #expect(timeline.pendingMarkNames == ["second"])

        timeline.rendered(480, of: 480, startFrame: 1480)
        let second = timeline.progress(playedDevice: 1960, rate: Self.rate, queueEmpty: true)
        #expect(second.sends.map(\.listener) == [2, nil])
        #expect(second.sends.map(\.event) == [.mark(name: "second"), .drained])
        #expect(second.latencies.isEmpty)
        #expect(timeline.pendingMarkNames.isEmpty)
        let again = timeline.progress(playedDevice: 1960, rate: Self.rate, queueEmpty: true)
        #expect(again.isEmpty)
    }

    @Test("started once the first frame after silence is heard; again only after drained or a clear")
    func startedAfterSilence() {
        var timeline = PlaybackTimeline()
        _ = timeline.queued(960, at: 0)
        #expect(timeline.progress(playedDevice: 5000, rate: Self.rate, queueEmpty: false).isEmpty)
        timeline.rendered(480, of: 480, startFrame: 1000)
        // Device frame 1000 carries the run's first frame: heard once the card is past it.
        #expect(timeline.progress(playedDevice: 1000, rate: Self.rate, queueEmpty: false).isEmpty)
        #expect(timeline.progress(playedDevice: 1001, rate: Self.rate, queueEmpty: false).sends.map(\.event) == [.started])
        timeline.rendered(480, of: 480, startFrame: 1480)
        #expect(timeline.progress(playedDevice: 1700, rate: Self.rate, queueEmpty: false).isEmpty)
        #expect(timeline.progress(playedDevice: 1960, rate: Self.rate, queueEmpty: true).sends.map(\.event) == [.drained])
        // A new run after the stream drained: started again, before the drained of a run heard whole at once.
        _ = timeline.queued(480, at: 1)
        timeline.rendered(480, of: 480, startFrame: 3000)
        #expect(timeline.progress(playedDevice: 3480, rate: Self.rate, queueEmpty: true).sends.map(\.event) == [.started, .drained])
        // A clear while a run's first frame is on its way: that run never started; the next one does.
        _ = timeline.queued(960, at: 2)
        timeline.rendered(480, of: 480, startFrame: 4000)
        _ = timeline.clear(flushed: 480, at: 3, measured: false)
        #expect(!timeline.progress(playedDevice: 4480, rate: Self.rate, queueEmpty: true).sends.contains { $0.event == .started })
        _ = timeline.queued(480, at: 4)
        timeline.rendered(480, of: 480, startFrame: 5000)
        #expect(timeline.progress(playedDevice: 5010, rate: Self.rate, queueEmpty: false).sends.map(\.event) == [.started])
    }

    @Test("a measured clear hands back the span until its audio was heard to the end; marks and probes go")
    func clearSpan() {
        var timeline = PlaybackTimeline()
        _ = timeline.queued(960, at: 0)
        let placed = timeline.addMark("dropped", listener: 1, at: 960, limit: 8, queueEmpty: false)
        #expect(placed)
        timeline.addProbe(position: 900, startNanoseconds: 0)
        timeline.rendered(480, of: 480, startFrame: 0)
        let played = timeline.clear(flushed: 480, at: 2_000_000, measured: true)
        #expect(played == 480)
        #expect(timeline.pendingMarkNames.isEmpty)
        let before = timeline.progress(playedDevice: 479, rate: Self.rate, queueEmpty: true)
        #expect(before.clearToSilence == nil)
        let progress = timeline.progress(playedDevice: 960, rate: Self.rate, queueEmpty: true)
        // Device frame 480 (the end of what was rendered) was heard 480 frames (10 ms) before frame 960.
        #expect(progress.clearToSilence?.nanoseconds(at: 20_000_000) == 8_000_000)
        #expect(progress.latencies.isEmpty && !progress.sends.contains { $0.event == .mark(name: "dropped") })
    }
}
