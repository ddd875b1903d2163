import AudioGateCore
import AudioGateTestSupport
import Foundation
import Testing

@testable import AudioGateServer

/// Events leave a stream in the order its lock made them, whichever thread made them.
@Suite("playback outbox")
struct PlaybackOutboxTests {
    @Test("the first post delivers, a post during delivery queues, take hands the queue over in order and then idles")
    func oneDeliverer() {
        var outbox = PlaybackOutbox()
        let batch = { (name: String) in
            PlaybackOutbox.Batch(sends: [.init(listener: nil, event: .mark(name: name))], listeners: [])
        }
        #expect(outbox.post(batch("a"))?.sends.map(\.event) == [.mark(name: "a")])
        #expect(outbox.post(batch("b")) == nil)
        #expect(outbox.post(batch("c")) == nil)
        #expect(outbox.take()?.flatMap { $0.sends.map(\.event) } == [.mark(name: "b"), .mark(name: "c")])
        #expect(outbox.take() == nil)
        // Idle again: the next post delivers itself.
        #expect(outbox.post(batch("d"))?.sends.map(\.event) == [.mark(name: "d")])
        #expect(outbox.take() == nil)
    }

    @Test("two sockets clearing at once: every listener sees both cleared in the order the stream took them")
    func concurrentClearsKeepOrder() async throws {
        let fixture = try PlaybackIngestTests.Fixture()
        let listeners = [PlaybackListener(), PlaybackListener()]
        for listener in listeners { fixture.stream.addListener(listener) }
        let rounds = 2000
        let tenth = PlaybackIngestTests.pcm([Int16](repeating: 0x1000, count: 4800))
        for _ in 0..<rounds {
            #expect(try await fixture.ingest().write(tenth))
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                fixture.stream.clear(id: index == 0 ? "a" : "b")
            }
        }
        for listener in listeners { fixture.stream.removeListener(listener) }
        var seen: [[PlaybackEvent]] = []
        for listener in listeners {
            var events: [PlaybackEvent] = []
            for await event in listener.events { events.append(event) }
            seen.append(events)
        }
        #expect(seen[0].count == 2 * rounds)
        #expect(seen[0] == seen[1])
        // Whichever clear came first flushed the audio; the other found the stream empty.
        let flushed = seen[0].map { event -> Int in
            if case .cleared(_, let flushed, _, _) = event { return flushed }
            return -1
        }
        let outOfOrder = stride(from: 0, to: flushed.count - 1, by: 2).filter { flushed[$0] <= 0 || flushed[$0 + 1] != 0 }
        #expect(outOfOrder.isEmpty)
    }
}
