import AudioGateCore
import Synchronization

/// The operator's gesture for the static pairing code (`POST /v1/sendspin/pairing`): a code printed
/// once can be tried by anyone who reaches the player, so an attempt runs only while a window is
/// open, one connection holds it, and it closes after a pairing or five wrong codes, as the
/// reference client does. An attempt that finds it closed waits (`client/pair-pending`) and goes
/// on when the window opens.
final class SendspinPairingWindow: Sendable {
    /// How long a window stays open.
    static let lifetimeNanoseconds: UInt64 = 300 * 1_000_000_000
    /// Wrong codes a window takes before it closes.
    static let maximumFailures = 5
    /// Dynamic-code rounds run before the player holds further attempts until a window opens:
    /// each round is one guess at six digits.
    static let roundLimit = 20

    /// An attempt waiting for the window: its connection, the `client/pair-init` that starts it
    /// and how to reach it.
    struct Waiter: Sendable {
        var generation: UInt64
        var pairInit: String
        var sender: AsyncStream<SendspinConnection.Outgoing>.Continuation
    }

    private struct State {
        var deadline: UInt64?
        var failures = 0
        /// The connection whose attempt holds the open window.
        var owner: UInt64?
        var waiter: Waiter?
        /// Dynamic-code rounds since the last pairing or window.
        var rounds = 0

        func isOpen(at now: UInt64) -> Bool { deadline.map { now < $0 } ?? false }

        mutating func close() {
            deadline = nil
            failures = 0
            owner = nil
        }
    }

    private let state = Mutex(State())

    /// Opens the window for `lifetimeNanoseconds` (again, if open) and lifts the dynamic code's
    /// round limit; an attempt that waited takes it and is sent its `client/pair-init`.
    func open(now: UInt64 = MonotonicClock.nowNanoseconds()) {
        let waiter = state.withLock { state -> Waiter? in
            state.close()
            state.rounds = 0
            state.deadline = now + Self.lifetimeNanoseconds
            guard let waiter = state.waiter else { return nil }
            state.waiter = nil
            state.owner = waiter.generation
            return waiter
        }
        if let waiter { waiter.sender.yield(.json(waiter.pairInit)) }
    }

    /// An attempt takes the open window (true), or waits for it (false: the caller says
    /// `client/pair-pending`); a window held by another connection's attempt counts as closed.
    func claim(_ waiter: Waiter, now: UInt64 = MonotonicClock.nowNanoseconds()) -> Bool {
        state.withLock { state in
            if state.isOpen(at: now), state.owner == nil || state.owner == waiter.generation {
                state.owner = waiter.generation
                return true
            }
            state.waiter = waiter
            return false
        }
    }

    /// Whether the connection's attempt holds the open window.
    func holds(_ generation: UInt64, now: UInt64 = MonotonicClock.nowNanoseconds()) -> Bool {
        state.withLock { $0.isOpen(at: now) && $0.owner == generation }
    }

    /// The attempt ended: a pairing closes the window; a wrong code counts towards its limit, and
    /// lets another connection try.
    func finished(_ generation: UInt64, paired: Bool) {
        state.withLock { state in
            guard state.owner == generation else { return }
            state.owner = nil
            if paired {
                state.close()
                return
            }
            state.failures += 1
            if state.failures >= Self.maximumFailures { state.close() }
        }
    }

    /// A dynamic-code round starts.
    func countRound() {
        state.withLock { $0.rounds += 1 }
    }

    /// Whether the dynamic code has run out of rounds until a pairing or a window.
    var roundLimitReached: Bool { state.withLock { $0.rounds >= Self.roundLimit } }

    /// A dynamic code paired: its rounds start again from none.
    func resetRounds() {
        state.withLock { $0.rounds = 0 }
    }

    /// The connection is gone (or its server aborted): it neither waits nor holds the window.
    func forget(_ generation: UInt64) {
        state.withLock { state in
            if state.waiter?.generation == generation { state.waiter = nil }
            if state.owner == generation { state.owner = nil }
        }
    }

    /// The window as `/v1/status` and `POST /v1/sendspin/pairing` show it.
    struct Status: Encodable, Equatable {
        var open: Bool
        /// Seconds it stays open.
        var secondsLeft: Int?
        /// A server's attempt waits for it to open.
        var attemptWaiting: Bool
    }

    var status: Status {
        let now = MonotonicClock.nowNanoseconds()
        return state.withLock { state in
            let left = state.isOpen(at: now) ? state.deadline.map { Int(($0 - now + 999_999_999) / 1_000_000_000) } : nil
            return Status(open: left != nil, secondsLeft: left, attemptWaiting: state.waiter != nil)
        }
    }
}
