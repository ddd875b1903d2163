import AudioGateCore
import CPrefetch
import NIOCore
import Synchronization

/// The capture clients of one NIO event loop that have something to send, written in one batch.
///
/// The capture thread collects a period's subscribers here and schedules the drain once per period,
/// so an event loop wakes once for all its clients instead of once per chunk per client; each
/// client's socket then gets its frames and a single flush. Lanes post their shared chunks here
/// with the members they go to, so the capture thread does not touch those clients at all.
final class CaptureDrain: Sendable {
    /// A lane's item and the members of this event loop it goes to.
    struct Post: Sendable {
        var item: CaptureLane.Item
        var members: [CaptureSubscriber]
    }

    private struct State {
        var pending: [CaptureSubscriber] = []
        /// The last batch's array, kept so the steady state allocates no new one.
        var spare: [CaptureSubscriber] = []
        var posts: [Post] = []
        var sparePosts: [Post] = []
        var scheduled = false
    }

    /// The event loop whose clients this drains.
    let eventLoop: any EventLoop
    private let metrics: CaptureMetrics
    private let state = Mutex(State())
    /// Send delays of the batch being written, recorded together when it is done: two event loops
    /// recording each send into the shared histograms would pass their locks back and forth.
    /// Only this event loop takes this lock.
    private let sendDelays = Mutex<[UInt64]>([])
    private let runCount = Atomic<Int>(0)

    /// Batches run so far: event loop wake-ups spent on capture.
    var runs: Int { runCount.load(ordering: .relaxed) }

    init(eventLoop: any EventLoop, metrics: CaptureMetrics) {
        self.eventLoop = eventLoop
        self.metrics = metrics
        sendDelays.withLock { $0.reserveCapacity(256) }
        state.withLock {
            $0.pending.reserveCapacity(64)
            $0.spare.reserveCapacity(64)
            $0.posts.reserveCapacity(8)
            $0.sparePosts.reserveCapacity(8)
        }
    }

    /// Adds a subscriber to the next batch without scheduling it (the caller schedules).
    func add(_ subscriber: CaptureSubscriber) {
        state.withLock { $0.pending.append(subscriber) }
    }

    /// Queues a lane's item for `members` without scheduling it (the caller schedules).
    func post(_ item: CaptureLane.Item, to members: [CaptureSubscriber]) {
        state.withLock { $0.posts.append(Post(item: item, members: members)) }
    }

    /// Runs the pending batch on the event loop, unless a run is already scheduled.
    func schedule() {
        let start = state.withLock { state -> Bool in
            guard !state.scheduled, !state.pending.isEmpty || !state.posts.isEmpty else { return false }
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

    /// Notes a chunk written now whose last sample was read at `ready`; on the event loop.
    func noteSent(ready: UInt64) {
        let now = MonotonicClock.nowNanoseconds()
        sendDelays.withLock { $0.append(now > ready ? now - ready : 0) }
    }

    /// Records the delays noted since the last call; on the event loop.
    func recordSendDelays() {
        sendDelays.withLock { delays in
            guard !delays.isEmpty else { return }
            metrics.recordSendDelays(nanoseconds: delays)
            delays.removeAll(keepingCapacity: true)
        }
    }

    private func run() {
        runCount.add(1, ordering: .relaxed)
        var (batch, posts) = state.withLock { state -> ([CaptureSubscriber], [Post]) in
            state.scheduled = false
            let batch = state.pending
            state.pending = state.spare
            state.spare = []
            let posts = state.posts
            state.posts = state.sparePosts
            state.sparePosts = []
            return (batch, posts)
        }
        if posts.count == 1 {
            // The usual period: one item for these members. Each is offered it and drained at once,
            // while its state is still in cache; with hundreds of members a second pass would miss
            // on every one of them again.
            let item = posts[0].item
            let members = posts[0].members
            for index in members.indices {
                Self.prefetch(after: index, in: members)
                let member = members[index]
                guard let writer = member.writer else { continue }
                if case .chunk(let chunk) = item, writer.writeDirect(chunk, for: member) { continue }
                if member.offer(item) { writer.drain(member) }
            }
        } else {
            // Every member is offered the period's items first, then drained once: one flush each.
            for post in posts {
                for member in post.members where member.offer(post.item) {
                    batch.append(member)
                }
            }
        }
        for subscriber in batch { subscriber.writer?.drain(subscriber) }
        recordSendDelays()
        batch.removeAll(keepingCapacity: true)
        posts.removeAll(keepingCapacity: true)
        state.withLock { state in
            if state.spare.capacity < batch.capacity { state.spare = batch }
            if state.sparePosts.capacity < posts.capacity { state.sparePosts = posts }
        }
    }
}

extension CaptureDrain {
    /// Starts loading the next members' objects while `index` is written.
    ///
    /// Each member's write goes through its subscriber, its writer, its channel, the channel's
    /// pipeline and a handler context; with hundreds of members (and a socket write between two of
    /// them) every one of those is a cache miss, waited for in turn. The writer's address is read
    /// from the subscriber and the others' from the writer, so the chain is fetched a step per
    /// member: the subscriber three members ahead, its writer two ahead, the channel, pipeline and
    /// context one ahead. By its turn a member's objects are in cache.
    fileprivate static func prefetch(after index: Int, in members: [CaptureSubscriber]) {
        let count = members.count
        if index + 3 < count { members[index + 3].prefetch() }
        if index + 2 < count { members[index + 2].writer?.prefetch() }
        if index + 1 < count { members[index + 1].writer?.prefetchTargets() }
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
        remember(drain)
    }

    /// Posts a lane's item to a drain's batch and remembers the drain.
    mutating func post(_ item: CaptureLane.Item, to members: [CaptureSubscriber], on drain: CaptureDrain) {
        drain.post(item, to: members)
        remember(drain)
    }

    private mutating func remember(_ drain: CaptureDrain) {
        if !touched.contains(where: { $0 === drain }) { touched.append(drain) }
    }

    /// Schedules every touched drain: one event loop wake-up each for the period.
    mutating func schedule() {
        for drain in touched { drain.schedule() }
        touched.removeAll(keepingCapacity: true)
    }
}
