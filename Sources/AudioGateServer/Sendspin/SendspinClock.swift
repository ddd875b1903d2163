import AudioGateCore
import Synchronization

/// The server's clock as the time filter sees it, fed by bursts of time exchanges: each burst is
/// `burstSize` exchanges back to back, and only the one with the shortest round trip reaches the
/// filter (the time-filter reference's recommended use). Shared by the connection's reader, which
/// records answers, and its timer, which starts bursts.
public final class SendspinClock: Sendable {
    /// Exchanges in one burst.
    static let burstSize = 8
    /// A burst unanswered this long ends the connection.
    static let answerTimeoutNanoseconds: UInt64 = 5_000_000_000
    /// Filter updates made at the quick interval before the slow one.
    static let quickUpdates = 10

    /// What the timer should do.
    enum BurstStart: Equatable {
        /// Send a `client/time`: a burst has begun.
        case send
        /// A burst is still being answered.
        case busy
        /// The server has not answered within `answerTimeoutNanoseconds`.
        case timedOut
    }

    struct Sample {
        var measurement: Int64
        var maxError: Int64
        var received: Int64
    }

    struct Burst {
        var startedNanoseconds: UInt64
        var answers = 0
        var best: Sample?
    }

    struct State {
        var filter = SendspinTimeFilter()
        var burst: Burst?
        var updates = 0
        /// The last synchronized filter of an earlier connection, until this connection's first
        /// burst says whether it still holds.
        var carried: SendspinTimeFilter?
    }

    private let state = Mutex(State())

    public init() {}

    /// Starts over for a new connection. A server that comes back (a restart, a network drop,
    /// another server process on the same host) usually still counts on the same clock: what was
    /// learnt of it is carried until the first burst, which keeps it if its answer agrees
    /// (`SendspinTimeFilter.agrees`) and starts afresh if not (another host, a reboot).
    func reset() {
        state.withLock { state in
            state = State(carried: state.filter.isSynchronized ? state.filter : state.carried)
        }
    }

    /// How long the timer waits before the next burst: quick until the filter has settled.
    var interval: Duration {
        state.withLock { $0.updates < Self.quickUpdates ? .milliseconds(250) : .seconds(2) }
    }

    /// Begins a burst at `now` (CLOCK_MONOTONIC ns) unless one is running.
    func beginBurst(now: UInt64) -> BurstStart {
        state.withLock { state in
            if let burst = state.burst {
                return now &- burst.startedNanoseconds > Self.answerTimeoutNanoseconds ? .timedOut : .busy
            }
            state.burst = Burst(startedNanoseconds: now)
            return .send
        }
    }

    /// What one `server/time` answer did.
    struct Recorded: Equatable {
        /// Send the next request of the burst.
        var sendNext = false
        /// This answer made the clock synchronized.
        var synchronized = false
        /// It did so on what an earlier connection had learnt, which its first burst agreed with.
        var resumed = false
        /// How far the answer moved our time for the server's time a second from now, in
        /// nanoseconds (0 before synchronization): chunks already dated move with it.
        var moved = 0.0
    }

    /// How far ahead of now the move of an update is measured: about the middle of what a server
    /// has sent ahead (the drift's share of the move changes by parts per million across it).
    static let retimeAheadMicroseconds: Int64 = 1_000_000

    /// Records a `server/time` answer that arrived at `now` (ns). An answer to no request of the
    /// running burst is ignored; server times that do not fit the arithmetic throw.
    func record(_ reply: SendspinTimeReply, receivedAt now: UInt64) throws(SendspinError) -> Recorded {
        let t4 = Int64(now / 1000)
        let t1 = reply.clientTransmitted
        let (t2, t3) = (Double(reply.serverReceived), Double(reply.serverTransmitted))
        let measurement = ((t2 - Double(t1)) + (t3 - Double(t4))) / 2
        let maxError = max(0, ((Double(t4) - Double(t1)) - (t3 - t2)) / 2)
        guard measurement.isFinite, abs(measurement) < SendspinTimeFilter.limit, maxError < SendspinTimeFilter.limit else {
            throw SendspinError(.outOfRange, "server/time stamps \(reply.serverReceived) and \(reply.serverTransmitted) are out of range")
        }
        let sample = Sample(measurement: Int64(measurement.rounded()), maxError: Int64(maxError.rounded()), received: t4)
        return state.withLock { state in
            guard var burst = state.burst, t1 <= t4, t1 >= Int64(burst.startedNanoseconds / 1000) else {
                return Recorded()
            }
            burst.answers += 1
            if burst.best.map({ sample.maxError < $0.maxError }) ?? true { burst.best = sample }
            guard burst.answers >= Self.burstSize, let best = burst.best else {
                state.burst = burst
                return Recorded(sendNext: true)
            }
            state.burst = nil
            let before = state.filter
            var resumed = false
            if let carried = state.carried {
                state.carried = nil
                if carried.agrees(measurement: best.measurement, maxError: best.maxError, at: best.received) {
                    state.filter = carried
                    resumed = true
                }
            }
            state.filter.update(measurement: best.measurement, maxError: best.maxError, timeAdded: best.received)
            state.updates += 1
            var recorded = Recorded(synchronized: !before.isSynchronized && state.filter.isSynchronized)
            recorded.resumed = resumed && recorded.synchronized
            if before.isSynchronized, state.filter.isSynchronized,
                let server = before.serverTime(forClient: t4 + Self.retimeAheadMicroseconds),
                let was = before.clientTime(forServer: server), let now = state.filter.clientTime(forServer: server)
            {
                recorded.moved = Double(now - was) * 1000
            }
            return recorded
        }
    }

    /// Whether chunks can be scheduled.
    public var isSynchronized: Bool { state.withLock { $0.filter.isSynchronized } }

    /// Our CLOCK_MONOTONIC nanoseconds for the server's `serverMicroseconds`, less `delay`
    /// microseconds; nil before synchronization or when that is before our clock's start. Throws
    /// `.outOfRange` for a time the arithmetic cannot hold (no real clock is near it).
    func localNanoseconds(forServer serverMicroseconds: Int64, minus delay: Int64) throws(SendspinError) -> UInt64? {
        let local = state.withLock { state -> Int64?? in
            guard state.filter.isSynchronized else { return .some(nil) }
            return state.filter.clientTime(forServer: serverMicroseconds).map { .some($0) }
        }
        guard let converted = local else {
            throw SendspinError(.outOfRange, "a chunk stamped \(serverMicroseconds) µs is out of range")
        }
        guard let converted else { return nil }
        let (shifted, o1) = converted.subtractingReportingOverflow(delay)
        let (nanoseconds, o2) = shifted.multipliedReportingOverflow(by: 1000)
        guard !o1, !o2 else { throw SendspinError(.outOfRange, "a chunk stamped \(serverMicroseconds) µs is out of range") }
        return nanoseconds > 0 ? UInt64(nanoseconds) : nil
    }

    /// Server minus our clock now, microseconds; nil before the first update.
    public var offsetMicroseconds: Double? {
        state.withLock { state in
            guard state.filter.count > 0 else { return nil }
            let now = Int64(MonotonicClock.nowNanoseconds() / 1000)
            return state.filter.serverTime(forClient: now).map { Double($0 - now) }
        }
    }

    /// The drift the filter applies, parts per million; nil before the first update.
    public var driftPPM: Double? {
        state.withLock { $0.filter.count > 0 ? $0.filter.effectiveDrift * 1e6 : nil }
    }

    /// The filter's standard deviation of the offset, microseconds; nil before the first update.
    public var errorMicroseconds: Double? {
        state.withLock { $0.filter.count > 0 ? $0.filter.error : nil }
    }
}
