import Synchronization

/// The offset of a snapserver's clock from ours, filtered as snapclient's `TimeProvider` does: the
/// median of the last 200 measurements, forgotten after a minute without one.
public final class SnapcastClock: Sendable {
    /// Measurements the median is taken over.
    public static let window = 200
    /// A gap after which old measurements no longer describe the server's clock.
    static let staleNanoseconds: UInt64 = 60_000_000_000

    struct State {
        var diffs: [Int64] = []
        var next = 0
        var lastUpdate: UInt64 = 0
        var median: Int64 = 0
        var jitter: Int64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Largest offset kept, in microseconds: a Time answer's 32-bit stamps give at most about 3.2e15;
    /// a larger value is held here, so the median, the deviations and a chunk's presentation time
    /// (a 32-bit stamp of at most 2.2e15 µs minus this, in nanoseconds) fit 64 bits.
    static let maximumDiffMicroseconds: Int64 = 1 << 52

    /// Adds one measurement (server minus client, microseconds) taken at `now` (CLOCK_MONOTONIC ns);
    /// a value that is not a number is ignored, one beyond `maximumDiffMicroseconds` is held at it.
    public func add(diffMicroseconds: Double, now: UInt64) {
        guard !diffMicroseconds.isNaN else { return }
        let limit = Double(Self.maximumDiffMicroseconds)
        let value = Int64(min(max(diffMicroseconds.rounded(), -limit), limit))
        state.withLock { state in
            if !state.diffs.isEmpty, now &- state.lastUpdate > Self.staleNanoseconds {
                state.diffs.removeAll(keepingCapacity: true)
                state.next = 0
            }
            state.lastUpdate = now
            if state.diffs.count < Self.window {
                state.diffs.append(value)
            } else {
                state.diffs[state.next] = value
                state.next = (state.next + 1) % Self.window
            }
            let sorted = state.diffs.sorted()
            state.median = sorted[sorted.count / 2]
            let deviations = sorted.map { abs($0 - state.median) }.sorted()
            state.jitter = deviations[deviations.count / 2]
        }
    }

    /// Forgets every measurement (a new connection may be to another server).
    public func reset() {
        state.withLock { $0 = State() }
    }

    /// Measurements held.
    public var count: Int { state.withLock { $0.diffs.count } }

    /// Server minus client clock in microseconds (0 before the first measurement).
    public var diffMicroseconds: Int64 { state.withLock { $0.median } }

    /// Median absolute deviation of the held measurements from their median, in microseconds.
    public var jitterMicroseconds: Int64 { state.withLock { $0.jitter } }
}
