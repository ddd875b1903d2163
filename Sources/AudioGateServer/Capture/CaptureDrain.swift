import NIOCore
import Synchronization

/// The capture clients of one NIO event loop that have something to send, written in one batch.
///
/// The capture thread collects a period's subscribers here and schedules the drain once per period,
/// so an event loop wakes once for all its clients instead of once per chunk per client; each
/// client's socket then gets its frames and a single flush.
final class CaptureDrain: Sendable {
    private struct State {
        var pending: [CaptureSubscriber] = []
        /// The last batch's array, kept so the steady state allocates no new one.
        var spare: [CaptureSubscriber] = []
        var scheduled = false
    }

    /// The event loop whose clients this drains.
    let eventLoop: any EventLoop
    private let state = Mutex(State())
    private let runCount = Atomic<Int>(0)

    /// Batches run so far: event loop wake-ups spent on capture.
    var runs: Int { runCount.load(ordering: .relaxed) }

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
        state.withLock {
            $0.pending.reserveCapacity(64)
            $0.spare.reserveCapacity(64)
        }
    }

    /// Adds a subscriber to the next batch without scheduling it (the caller schedules).
    func add(_ subscriber: CaptureSubscriber) {
        state.withLock { $0.pending.append(subscriber) }
    }

    /// Runs the pending batch on the event loop, unless a run is already scheduled.
    func schedule() {
        let start = state.withLock { state -> Bool in
            guard !state.scheduled, !state.pending.isEmpty else { return false }
            state.scheduled = true
            return true
        }
        if start { eventLoop.execute { self.run() } }
    }

    /// Adds a subscriber and schedules the batch (events outside a capture period).
    func request(_ subscriber: CaptureSubscriber) {
        add(subscriber)
        schedule()
    }

    private func run() {
        runCount.add(1, ordering: .relaxed)
        var batch = state.withLock { state -> [CaptureSubscriber] in
            state.scheduled = false
            let batch = state.pending
            state.pending = state.spare
            state.spare = []
            return batch
        }
        for subscriber in batch { subscriber.writer?.drain(subscriber) }
        batch.removeAll(keepingCapacity: true)
        state.withLock { state in
            if state.spare.capacity < batch.capacity { state.spare = batch }
        }
    }
}

/// The drains one capture period touched; scheduled together when the period is done.
struct CaptureDrains {
    private var touched: [CaptureDrain] = []

    init() {
        touched.reserveCapacity(8)
    }

    /// Adds a subscriber to its drain's batch and remembers the drain.
    mutating func add(_ subscriber: CaptureSubscriber, to drain: CaptureDrain) {
        drain.add(subscriber)
        if !touched.contains(where: { $0 === drain }) { touched.append(drain) }
    }

    /// Schedules every touched drain: one event loop wake-up each for the period.
    mutating func schedule() {
        for drain in touched { drain.schedule() }
        touched.removeAll(keepingCapacity: true)
    }
}
