@testable import AudioGateServer
import Foundation
import Synchronization
import Testing

/// Which of several servers that dial the player holds it: the specification's rule, applied at
/// each connection's `server/hello`.
@Suite("Sendspin player seat")
struct SendspinSeatTests {
    private let serverA = String(repeating: "A", count: 43)
    private let serverB = String(repeating: "B", count: 43)

    private func player(
        directory: String = FileManager.default.temporaryDirectory.appendingPathComponent("audiogate-seat-\(UUID().uuidString)").path
    ) -> SendspinClient {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let configuration = TestServer.configuration(device: "loopback") {
            $0.sendspin.listen = .init(host: "127.0.0.1", port: 0)
            $0.dataDirectory = directory
        }
        return TestServer.make(configuration).0.sendspin!
    }

    @Test("a server dialing for discovery stays out while another holds the player; one dialing for playback takes over")
    func takeover() {
        let client = player()
        let evicted = Atomic<Int>(0)
        let first = client.nextGeneration()
        #expect(client.claim(generation: first, serverName: "A", serverID: serverA, reason: "discovery", peer: nil) {
            evicted.add(1, ordering: .relaxed)
        })
        let second = client.nextGeneration()
        #expect(!client.claim(generation: second, serverName: "B", serverID: serverB, reason: "discovery", peer: nil) {})
        #expect(client.holds(first) && !client.holds(second))
        client.release(second)
        #expect(client.holds(first))
        let third = client.nextGeneration()
        #expect(client.claim(generation: third, serverName: "B", serverID: serverB, reason: "playback", peer: nil) {})
        #expect(evicted.load(ordering: .relaxed) == 1)
        #expect(client.holds(third) && !client.holds(first))
        #expect(client.status.player.serverName == "B")
        client.release(first)
        #expect(client.holds(third))
        client.release(third)
        #expect(!client.holds(third))
    }

    @Test("between two servers dialing for discovery, the one that last played here wins, and is remembered")
    func lastPlayed() async throws {
        let client = player()
        let first = client.nextGeneration()
        #expect(client.claim(generation: first, serverName: "A", serverID: serverA, reason: "discovery", peer: nil) {})
        await client.playing(serverID: serverA)
        client.release(first)
        let holder = client.nextGeneration()
        #expect(client.claim(generation: holder, serverName: "B", serverID: serverB, reason: "discovery", peer: nil) {})
        let returning = client.nextGeneration()
        #expect(client.claim(generation: returning, serverName: "A", serverID: serverA, reason: "discovery", peer: nil) {})
        #expect(!client.holds(holder))
        // A server dialing for playback is not displaced by the last played one coming for discovery.
        let playback = client.nextGeneration()
        #expect(client.claim(generation: playback, serverName: "B", serverID: serverB, reason: "playback", peer: nil) {})
        let again = client.nextGeneration()
        #expect(!client.claim(generation: again, serverName: "A", serverID: serverA, reason: "discovery", peer: nil) {})
        let restarted = player(directory: client.configuration.dataDirectory)
        restarted.loadLastPlayedServer()
        #expect(restarted.state.withLock { $0.lastPlayedServer } == serverA)
        try? FileManager.default.removeItem(atPath: client.configuration.dataDirectory)
    }
}

/// A server's message rate: a start-up burst and a steady rate pass, a flood closes the connection.
@Suite("Sendspin message budget")
struct SendspinMessageBudgetTests {
    @Test("a burst of 4000 and 2000 a second pass; past that the flood throws; the reader yields every 16")
    func budget() throws {
        var budget = SendspinMessageBudget()
        var now: UInt64 = 1_000_000_000
        var yields = 0
        for _ in 0..<4000 where try budget.take(now: now) { yields += 1 }
        #expect(yields == 250)
        #expect(throws: SendspinError.self) { try budget.take(now: now) }
        // Ten seconds at 1000 a second (a millisecond apart) stay within the refill.
        var steady = SendspinMessageBudget()
        for _ in 0..<10_000 {
            now += 1_000_000
            _ = try steady.take(now: now)
        }
        // A flood at 20000 a second outruns it within a second.
        var flooded = false
        for _ in 0..<20_000 {
            now += 50_000
            do { _ = try steady.take(now: now) } catch { flooded = error.code == .flood; break }
        }
        #expect(flooded)
    }
}
