import AudioGateCore
import NIOCore

extension CaptureSubscriber {
    /// How a writer subscriber's drain stands; subscribers that await `next` stay `starting`.
    enum Drain {
        /// The writer's start message is not out yet: audio only queues.
        case starting
        /// Handed to its drain when something arrives.
        case idle
        /// Sits in its drain's pending batch, until that drain starts.
        case requested
    }

    /// Where a subscriber's life stands.
    enum Lifecycle {
        /// Takes audio and events.
        case open(Drain)
        /// Takes no more audio; what is queued is still handed out, then `next` returns nil.
        case finishing(Drain)
        /// Ended: a waiting `next` returns nil and appends are ignored.
        case closed
    }

    /// What a change of state asks for, done after the subscriber's lock is released.
    enum Wake {
        case none
        /// Resume the task waiting in `next`.
        case resume(CheckedContinuation<Void, Never>)
        /// Hand the subscriber to its writer's drain.
        case drain
    }

    /// The subscriber's complete chunks: cut and copied by itself, or shared with its lane.
    enum Queue {
        case copies(CopiedChunks)
        case shared(SharedChunks)
    }

    struct State: AwaitedState {
        var lifecycle = Lifecycle.open(.starting)
        /// Exactly one of the two is set, for good. Two optionals rather than the `Queue` enum: the
        /// fan-out changes them in place every period, and an optional's payload is changed in
        /// place without copying the other type's storage through the enum's value witnesses.
        var copies: CopiedChunks?
        var shared: SharedChunks?
        var pendingDroppedFrames = 0
        var droppedFrames = 0
        /// Device events, each with the number of chunks completed before it: it is handed out only
        /// after them, so a client hears the audio captured before a loss before it hears of the loss.
        var deviceEvents: [(state: DeviceMessage.State, after: UInt64)] = []
        var completedChunks: UInt64 = 0
        var droppedChunks: UInt64 = 0
        var pendingLevel: (rms: Double, peak: Double)?
        var voiceEvents: [(speech: Bool, timestamp: UInt64)] = []
        /// The newest `music` message not yet sent (a newer one replaces it).
        var pendingMusic: String?
        /// The task waiting in `next`.
        var waiter: CheckedContinuation<Void, Never>?
        var handedOut: UInt64 = 0

        init(queue: Queue) {
            switch queue {
            case .copies(let copies): self.copies = copies
            case .shared(let shared): self.shared = shared
            }
        }

        /// Whether audio is still taken (neither finishing nor closed).
        var isOpen: Bool {
            if case .open = lifecycle { return true }
            return false
        }

        var isClosed: Bool {
            if case .closed = lifecycle { return true }
            return false
        }

        var hasWork: Bool {
            switch lifecycle {
            case .finishing, .closed: return true
            case .open: break
            }
            return !deviceEvents.isEmpty || pendingDroppedFrames > 0 || pendingLevel != nil
                || !voiceEvents.isEmpty || pendingMusic != nil || queuedChunks > 0
        }

        /// Complete chunks queued, copied or shared.
        var queuedChunks: Int {
            copies?.count ?? shared?.count ?? 0
        }

        /// Changes the copied queue in place; nil for a lane member.
        mutating func withCopies<Result>(_ body: (inout CopiedChunks) -> Result) -> Result? {
            guard copies != nil else { return nil }
            return body(&copies!)
        }

        /// Changes the shared queue in place; nil for a subscriber that copies.
        mutating func withShared<Result>(_ body: (inout SharedChunks) -> Result) -> Result? {
            guard shared != nil else { return nil }
            return body(&shared!)
        }

        // MARK: Transitions

        /// Something was queued: wake the waiting task, or hand a writer subscriber to its drain.
        mutating func wake(hasWriter: Bool) -> Wake {
            if hasWriter { return requestDrain() ? .drain : .none }
            return takeWaiter().map(Wake.resume) ?? .none
        }

        /// Whether a writer subscriber must be handed to its drain now (at most once until it drains).
        mutating func requestDrain() -> Bool {
            switch lifecycle {
            case .open(.idle):
                lifecycle = .open(.requested)
                return true
            case .finishing(.idle):
                lifecycle = .finishing(.requested)
                return true
            case .open, .finishing, .closed:
                return false
            }
        }

        /// The drain is taking events: appends from here on request a new drain.
        mutating func drainStarted() {
            switch lifecycle {
            case .open(.requested): lifecycle = .open(.idle)
            case .finishing(.requested): lifecycle = .finishing(.idle)
            case .open, .finishing, .closed: break
            }
        }

        /// The writer's start message is out: from now on arrivals request drains.
        mutating func goLive() {
            switch lifecycle {
            case .open(.starting): lifecycle = .open(.idle)
            case .finishing(.starting): lifecycle = .finishing(.idle)
            case .open, .finishing, .closed: break
            }
        }

        /// Whether a lane's chunk may bypass the queue: live, not in a batch, nothing queued before it.
        var takesDirect: Bool {
            guard case .open(.idle) = lifecycle else { return false }
            return !hasWork
        }

        /// Stops taking audio; the waiting task is resumed to hand out the rest.
        mutating func finish() -> Wake {
            if case .open(let drain) = lifecycle { lifecycle = .finishing(drain) }
            return takeWaiter().map(Wake.resume) ?? .none
        }

        /// Ends the subscriber; the waiting task is resumed to see the end.
        mutating func close() -> Wake {
            lifecycle = .closed
            return takeWaiter().map(Wake.resume) ?? .none
        }

        /// Counts the oldest whole chunk as dropped (the caller removed it): the queue keeps its bound.
        mutating func countDroppedChunk(frames: Int) {
            pendingDroppedFrames += frames
            droppedFrames += frames
            droppedChunks += 1
        }

        /// Queues a device event after the chunks completed so far; false if it repeats the last one.
        mutating func queueDevice(_ device: DeviceMessage.State) -> Bool {
            guard deviceEvents.last?.state != device else { return false }
            // A client that never reads must not grow this list: only the newest few matter.
            if deviceEvents.count >= 8 { deviceEvents.removeFirst() }
            deviceEvents.append((device, completedChunks))
            return true
        }
    }
}
