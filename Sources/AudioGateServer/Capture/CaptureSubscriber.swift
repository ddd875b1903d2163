import AudioGateCore
import CPrefetch
import NIOCore
import Synchronization

/// One capture client's bounded queue of encoded audio plus its pending events.
///
/// The capture thread appends (never waiting on the client). A WebSocket client has a `writer`:
/// its event loop drains the queue in the batch of its `CaptureDrain`, once per device period for
/// all its clients; HTTP streams and recordings await `next(into:)` instead. When the queue holds
/// more than its bound, whole chunks are dropped from the old end, so chunks stay aligned and the
/// client learns the amount from an `overrun` event.
public final class CaptureSubscriber: Sendable {
    /// How the client is connected (for status).
    public enum Transport: String, Sendable {
        case webSocket = "websocket"
        case http
        /// A server-side recording (not a network client).
        case recording
        /// A Wyoming mic client.
        case wyoming
    }

    /// What the writer task is handed next.
    public enum Event: Sendable, Equatable {
        /// A full chunk, copied into the caller's buffer. `seq` counts chunks handed out from 0;
        /// `timestamp` is the monotonic ns capture time of its first frame, `ready` the time the
        /// period completing it was read from the device.
        case chunk(seq: UInt64, timestamp: UInt64, ready: UInt64)
        /// Audio dropped from this client's queue since the last report, in milliseconds.
        case overrun(droppedMilliseconds: Int)
        /// The capture device was lost or came back.
        case device(DeviceMessage.State)
        /// The capture level of the last 50 ms (only with `levels=true`).
        case level(rms: Double, peak: Double)
        /// Speech started or ended at capture time `timestamp` (monotonic ns; only with `vad=true`).
        case voice(speech: Bool, timestamp: UInt64)
    }

    /// Capture time bookkeeping of one queued chunk.
    struct ChunkStamp: BitwiseCopyable {
        var start: UInt64
        var ready: UInt64
    }

    private struct State {
        let bytes: RingBuffer<UInt8>
        let stamps: RingBuffer<ChunkStamp>
        /// Whether chunks are cut into `bytes` and `stamps`; a lane member never looks at them, so
        /// its drain does not touch (and miss in cache on) two objects it never uses.
        let copies: Bool
        /// Complete chunks shared with the rest of a lane (members only), oldest first.
        var shared = CircularBuffer<SharedChunk>()
        /// Bytes of the chunk being filled (it sits after the complete chunks in `bytes`).
        var openFill = 0
        var openStart: UInt64 = 0
        var pendingDroppedFrames = 0
        var droppedFrames = 0
        /// Device events, each with the number of chunks completed before it: it is handed out only
        /// after them, so a client hears the audio captured before a loss before it hears of the loss.
        var deviceEvents: [(state: DeviceMessage.State, after: UInt64)] = []
        var completedChunks: UInt64 = 0
        var droppedChunks: UInt64 = 0
        var pendingLevel: (rms: Double, peak: Double)?
        var voiceEvents: [(speech: Bool, timestamp: UInt64)] = []
        var waiter: CheckedContinuation<Void, Never>?
        /// Resumed once, when the subscriber is closed (`waitUntilClosed`).
        var closeWaiter: CheckedContinuation<Void, Never>?
        /// The writer has started draining (its start message is out); before that audio only queues.
        var live = false
        /// The subscriber sits in its drain's pending batch; cleared when a drain starts.
        var drainRequested = false
        var closed = false
        /// No more audio is taken; what is queued is still handed out, then `next` returns nil.
        var finishing = false
        var handedOut: UInt64 = 0

        var hasWork: Bool {
            closed || finishing || !deviceEvents.isEmpty || pendingDroppedFrames > 0 || pendingLevel != nil
                || !voiceEvents.isEmpty || !shared.isEmpty || (copies && !stamps.isEmpty)
        }

        /// Complete chunks queued, copied or shared.
        var queuedChunks: Int { copies ? stamps.count : shared.count }

        /// The stored waiter, to be resumed after the lock is released.
        mutating func takeWaiter() -> CheckedContinuation<Void, Never>? {
            defer { waiter = nil }
            return waiter
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

        /// Whether a writer subscriber must be handed to its drain now (at most once until it drains).
        mutating func requestDrain() -> Bool {
            guard live, !drainRequested, !closed else { return false }
            drainRequested = true
            return true
        }
    }

    /// A number unique within the server, for status.
    public let id: Int
    /// What the client asked for.
    public let parameters: CaptureParameters
    /// WebSocket or HTTP.
    public let transport: Transport
    /// Complete chunks the queue holds before dropping the oldest.
    public let capacityChunks: Int
    let chunkBytes: Int
    /// Writes this client's socket from its event loop; nil for subscribers that await `next(into:)`.
    let writer: CaptureChannelWriter?
    /// Takes its chunks from a lane, framed and shared, instead of cutting its own (binary
    /// WebSocket clients of groups without voice processing).
    let sharesChunks: Bool
    private let state: Mutex<State>

    /// A queue of `queueMilliseconds` of audio, rounded up to whole chunks (at least 2).
    init(
        id: Int, parameters: CaptureParameters, transport: Transport, queueMilliseconds: Int,
        writer: CaptureChannelWriter? = nil
    ) {
        self.id = id
        self.writer = writer
        self.parameters = parameters
        self.transport = transport
        let chunks = (max(queueMilliseconds, 1) + parameters.chunkMilliseconds - 1) / parameters.chunkMilliseconds
        capacityChunks = max(chunks, 2)
        chunkBytes = parameters.chunkBytes
        sharesChunks = writer != nil && parameters.encoding == .binary && !parameters.processing.isEnabled
        // One chunk more than the bound: room for the chunk being filled. A lane member queues
        // references to shared chunks and never uses its own rings.
        let ringChunks = sharesChunks ? 1 : capacityChunks + 1
        state = Mutex(
            State(
                bytes: RingBuffer(capacity: ringChunks * parameters.chunkBytes),
                stamps: RingBuffer(capacity: ringChunks), copies: !sharesChunks))
        let shared = sharesChunks ? capacityChunks + 1 : 1
        // The event lists keep no reserved storage: they are rare, and an empty list without storage
        // is checked without touching memory of this client's own.
        state.withLock { $0.shared = CircularBuffer(initialCapacity: shared) }
    }

    // MARK: - Capture thread side

    /// Appends encoded frames whose first frame was captured at `start` (monotonic ns).
    ///
    /// Called on the capture thread: takes this subscriber's lock briefly and never waits on the client.
    /// With `drains` (the capture thread's period batch) a writer's drain is only collected, and
    /// scheduled once for the whole period; without (the voice thread) it is scheduled at once.
    func append(
        _ bytes: UnsafeBufferPointer<UInt8>, start: Double, nanosecondsPerFrame: Double, ready: UInt64,
        drains: UnsafeMutablePointer<CaptureDrains>? = nil
    ) {
        let bytesPerFrame = parameters.format.bytesPerFrame
        let chunkFrames = parameters.chunkFrames
        let lent = LentBuffer(bytes)
        let hasWriter = writer != nil
        let (waiter, drain) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Bool) in
            let bytes = lent.readOnly
            guard !state.closed, !state.finishing, let base = bytes.baseAddress else { return (nil, false) }
            var offset = 0
            var completed = false
            while offset < bytes.count {
                if state.openFill == 0 {
                    let frame = Double(offset / bytesPerFrame)
                    state.openStart = UInt64(max(0, start + frame * nanosecondsPerFrame))
                }
                let take = min(chunkBytes - state.openFill, bytes.count - offset)
                state.bytes.write(UnsafeBufferPointer(start: base + offset, count: take))
                state.openFill += take
                offset += take
                guard state.openFill == chunkBytes else { continue }
                state.openFill = 0
                state.completedChunks += 1
                completed = true
                var stamp = ChunkStamp(start: state.openStart, ready: ready)
                withUnsafePointer(to: &stamp) { _ = state.stamps.write(UnsafeBufferPointer(start: $0, count: 1)) }
                if state.stamps.count > capacityChunks {
                    // The oldest whole chunk goes, so the queue never holds more than its bound.
                    state.bytes.discard(chunkBytes)
                    state.stamps.discard(1)
                    state.countDroppedChunk(frames: chunkFrames)
                }
            }
            guard completed else { return (nil, false) }
            if hasWriter { return (nil, state.requestDrain()) }
            return (state.takeWaiter(), false)
        }
        waiter?.resume()
        if drain { requestDrain(drains) }
    }

    /// Queues a lane's item (on the event loop); returns whether the subscriber must now be drained.
    func offer(_ item: CaptureLane.Item) -> Bool {
        let chunkFrames = parameters.chunkFrames
        return state.withLock { state in
            guard !state.closed, !state.finishing else { return false }
            switch item {
            case .chunk(let chunk):
                state.shared.append(chunk)
                state.completedChunks += 1
                if state.shared.count > capacityChunks {
                    state.shared.removeFirst()
                    state.countDroppedChunk(frames: chunkFrames)
                }
            case .device(let device):
                guard state.queueDevice(device) else { return false }
            }
            return state.requestDrain()
        }
    }

    /// Starts loading this subscriber's fields and lock into the cache (see `CaptureDrain`'s prefetch).
    func prefetch() {
        audiogate_prefetch(Unmanaged.passUnretained(self).toOpaque(), 320)
    }

    /// Takes a lane's chunk to be written at once (on the event loop), when nothing is queued
    /// before it and the writer is live: the chunk never enters the queue, so the steady state
    /// touches no queue storage. False: `offer` it instead.
    func takeDirect() -> Bool {
        state.withLock { state in
            guard state.live, !state.drainRequested, !state.hasWork else { return false }
            state.completedChunks += 1
            state.handedOut += 1
            return true
        }
    }

    /// Hands this subscriber to its event loop's drain: into the period's batch, or scheduled now.
    private func requestDrain(_ drains: UnsafeMutablePointer<CaptureDrains>?) {
        guard let writer else { return }
        if let drains {
            drains.pointee.add(self, to: writer.drain)
        } else {
            writer.drain.request(self)
        }
    }

    /// Wakes whoever hands this subscriber's events out: the waiting task, or the writer's drain.
    private func wake(_ waiter: CheckedContinuation<Void, Never>?, drain: Bool, _ drains: UnsafeMutablePointer<CaptureDrains>? = nil) {
        waiter?.resume()
        if drain { requestDrain(drains) }
    }

    /// Queues a device event (deduplicated against the last queued one).
    func deliver(_ device: DeviceMessage.State, drains: UnsafeMutablePointer<CaptureDrains>? = nil) {
        let hasWriter = writer != nil
        let (waiter, drain) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Bool) in
            guard state.queueDevice(device) else { return (nil, false) }
            return hasWriter ? (nil, state.requestDrain()) : (state.takeWaiter(), false)
        }
        wake(waiter, drain: drain, drains)
    }

    /// Offers the newest level reading (replacing one not yet sent).
    func deliverLevel(rms: Double, peak: Double, drains: UnsafeMutablePointer<CaptureDrains>? = nil) {
        let hasWriter = writer != nil
        let (waiter, drain) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Bool) in
            state.pendingLevel = (rms, peak)
            return hasWriter ? (nil, state.requestDrain()) : (state.takeWaiter(), false)
        }
        wake(waiter, drain: drain, drains)
    }

    /// Queues a voice activity event (from the voice processing thread).
    func deliverVoice(speech: Bool, timestamp: UInt64) {
        let hasWriter = writer != nil
        let (waiter, drain) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Bool) in
            // A client that never reads must not grow this list: only the newest few matter.
            if state.voiceEvents.count >= 8 { state.voiceEvents.removeFirst() }
            state.voiceEvents.append((speech, timestamp))
            return hasWriter ? (nil, state.requestDrain()) : (state.takeWaiter(), false)
        }
        wake(waiter, drain: drain)
    }

    // MARK: - Writer side

    /// Waits for the next event; chunk bytes are copied into `buffer` (resized to one chunk).
    ///
    /// Returns nil once the subscriber is closed or the calling task is cancelled.
    public func next(into buffer: inout [UInt8]) async -> Event? {
        if buffer.count != chunkBytes { buffer = [UInt8](repeating: 0, count: chunkBytes) }
        while true {
            if Task.isCancelled { return nil }
            let event = buffer.withUnsafeMutableBufferPointer { take(into: $0) }
            if let event { return event }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = state.withLock { state -> Bool in
                        if state.hasWork { return true }
                        state.waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                close()
            }
        }
    }

    /// The next event without waiting: `.some(nil)` once the stream has ended, nil when nothing is
    /// queued. A chunk's bytes are copied into `destination` (at least `chunkBytes` long).
    func take(into destination: UnsafeMutableBufferPointer<UInt8>) -> Event?? {
        let lent = LentBuffer(destination)
        return state.withLock { state in
            var frame: ByteBuffer?
            return take(into: lent.buffer, state: &state, frame: &frame)
        }
    }

    /// `take` for a writer's drain, which also learns whether more is queued, so it needs no second
    /// look; `startingDrain` does what `drainStarted` does, under the same lock.
    ///
    /// A lane member's chunk comes back as `frame`, framed and shared, with nothing copied.
    func takeForDrain(
        into destination: UnsafeMutableBufferPointer<UInt8>, startingDrain: Bool
    ) -> (event: Event??, more: Bool, frame: ByteBuffer?) {
        let lent = LentBuffer(destination)
        return state.withLock { state in
            if startingDrain { state.drainRequested = false }
            var frame: ByteBuffer?
            let event = take(into: lent.buffer, state: &state, frame: &frame)
            return (event, state.hasWork, frame)
        }
    }

    private func take(
        into buffer: UnsafeMutableBufferPointer<UInt8>, state: inout State, frame: inout ByteBuffer?
    ) -> Event?? {
        if state.closed { return .some(nil) }
        if let first = state.deviceEvents.first, state.handedOut + state.droppedChunks >= first.after {
            return Event.device(state.deviceEvents.removeFirst().state)
        }
        if state.pendingDroppedFrames > 0 {
            let frames = state.pendingDroppedFrames
            state.pendingDroppedFrames = 0
            let milliseconds = parameters.format.milliseconds(forFrames: frames)
            return Event.overrun(droppedMilliseconds: Int(milliseconds.rounded()))
        }
        if !state.voiceEvents.isEmpty {
            let voice = state.voiceEvents.removeFirst()
            return Event.voice(speech: voice.speech, timestamp: voice.timestamp)
        }
        if let level = state.pendingLevel {
            state.pendingLevel = nil
            return Event.level(rms: level.rms, peak: level.peak)
        }
        if !state.copies, let chunk = state.shared.popFirst() {
            frame = chunk.frame
            let seq = state.handedOut
            state.handedOut += 1
            return Event.chunk(seq: seq, timestamp: chunk.start, ready: chunk.ready)
        }
        if state.copies, !state.stamps.isEmpty {
            // Exactly one chunk: the caller's buffer may be larger.
            state.bytes.read(into: UnsafeMutableBufferPointer(rebasing: buffer[0..<chunkBytes]))
            var stamp = ChunkStamp(start: 0, ready: 0)
            withUnsafeMutablePointer(to: &stamp) {
                _ = state.stamps.read(into: UnsafeMutableBufferPointer(start: $0, count: 1))
            }
            let seq = state.handedOut
            state.handedOut += 1
            return Event.chunk(seq: seq, timestamp: stamp.start, ready: stamp.ready)
        }
        if state.finishing { return .some(nil) }
        return nil
    }

    /// Starts a writer's draining (its start message is out) and says whether anything is queued.
    func goLive() -> Bool {
        state.withLock { state in
            state.live = true
            return state.hasWork
        }
    }

    /// Called by the drain before it takes events: appends from here on request a new drain.
    func drainStarted() {
        state.withLock { $0.drainRequested = false }
    }

    /// Returns once the subscriber is closed (by the hub, the connection or graceful shutdown).
    func waitUntilClosed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let closed = state.withLock { state -> Bool in
                if state.closed { return true }
                state.closeWaiter = continuation
                return false
            }
            if closed { continuation.resume() }
        }
    }

    /// Takes no more audio, but hands out the complete chunks already queued before `next` returns nil:
    /// a recording stopped by request keeps everything captured up to the request.
    public func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.finishing = true
            return state.takeWaiter()
        }
        waiter?.resume()
    }

    /// Ends the stream: a waiting `next` returns nil and appends are ignored.
    public func close() {
        let (waiter, closeWaiter) = state.withLock { state in
            state.closed = true
            defer { state.closeWaiter = nil }
            return (state.takeWaiter(), state.closeWaiter)
        }
        waiter?.resume()
        closeWaiter?.resume()
    }

    // MARK: - Status

    /// Milliseconds of audio dropped because this client fell behind.
    public var droppedMilliseconds: Double {
        let frames = state.withLock { $0.droppedFrames }
        return parameters.format.milliseconds(forFrames: frames)
    }

    /// Milliseconds of complete chunks waiting to be sent.
    public var queuedMilliseconds: Double {
        let chunks = state.withLock { $0.queuedChunks }
        return parameters.format.milliseconds(forFrames: chunks * parameters.chunkFrames)
    }

    /// Chunks handed to the writer so far.
    public var sentChunks: UInt64 { state.withLock { $0.handedOut } }
}
