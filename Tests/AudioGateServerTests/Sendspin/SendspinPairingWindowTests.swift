import Testing

@testable import AudioGateServer

/// The static pairing code's gesture: who may run an attempt, and when the window closes.
@Suite("Sendspin pairing window")
struct SendspinPairingWindowTests {
    private static func waiter(_ generation: UInt64, index: Int = 1) -> (SendspinPairingWindow.Waiter, AsyncStream<SendspinConnection.Outgoing>) {
        let (stream, sender) = AsyncStream.makeStream(of: SendspinConnection.Outgoing.self)
        return (SendspinPairingWindow.Waiter(generation: generation, pairInit: SendspinOutbound.pairInit(pairingIndex: index), sender: sender), stream)
    }

    private static func sent(_ stream: AsyncStream<SendspinConnection.Outgoing>) async -> [String] {
        var texts: [String] = []
        for await item in stream {
            if case .json(let text) = item { texts.append(text) }
        }
        return texts
    }

    @Test("an attempt waits while the window is closed, and opening it sends the waiting one its pair-init")
    func waits() async {
        let window = SendspinPairingWindow()
        let (first, stream) = Self.waiter(1, index: 3)
        #expect(!window.claim(first, now: 0))
        #expect(window.status.attemptWaiting)
        window.open(now: 10)
        first.sender.finish()
        #expect(await Self.sent(stream) == [#"{"payload":{"pairing_index":3},"type":"client/pair-init"}"#])
        #expect(window.holds(1, now: 11))
        #expect(!window.holds(2, now: 11))
        // Another connection's attempt waits while the first holds the window.
        let (second, _) = Self.waiter(2)
        #expect(!window.claim(second, now: 12))
    }

    @Test("the window closes after its lifetime, a pairing, or five wrong codes")
    func closes() {
        let window = SendspinPairingWindow()
        window.open(now: 0)
        #expect(window.claim(Self.waiter(1).0, now: 1))
        #expect(!window.holds(1, now: SendspinPairingWindow.lifetimeNanoseconds))
        window.open(now: 0)
        #expect(window.claim(Self.waiter(1).0, now: 1))
        window.finished(1, paired: true)
        #expect(!window.claim(Self.waiter(2).0, now: 2))
        window.forget(2)
        window.open(now: 0)
        for attempt in 1...SendspinPairingWindow.maximumFailures {
            #expect(window.claim(Self.waiter(UInt64(attempt)).0, now: 1), "attempt \(attempt)")
            window.finished(UInt64(attempt), paired: false)
        }
        #expect(!window.claim(Self.waiter(9).0, now: 2))
    }

    @Test("the dynamic code's rounds run out at the limit, and a window or a pairing gives them back")
    func rounds() {
        let window = SendspinPairingWindow()
        for _ in 1..<SendspinPairingWindow.roundLimit { window.countRound() }
        #expect(!window.roundLimitReached)
        window.countRound()
        #expect(window.roundLimitReached)
        window.open(now: 0)
        #expect(!window.roundLimitReached)
        for _ in 0..<SendspinPairingWindow.roundLimit { window.countRound() }
        window.resetRounds()
        #expect(!window.roundLimitReached)
    }

    @Test("a connection that goes neither waits nor holds the window")
    func forgets() {
        let window = SendspinPairingWindow()
        let (first, _) = Self.waiter(1)
        #expect(!window.claim(first, now: 0))
        window.forget(1)
        #expect(!window.status.attemptWaiting)
        window.open(now: 0)
        #expect(window.claim(Self.waiter(2).0, now: 1))
        window.forget(2)
        #expect(window.claim(Self.waiter(3).0, now: 2))
    }
}
