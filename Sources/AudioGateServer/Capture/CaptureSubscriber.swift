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
        /// A shared encoder of compressed capture (its clients are counted instead).
        case encoder
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
        /// What the music player plays now, the `music` message's JSON (only with `music=true`).
        case music(String)
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
    let state: Mutex<State>
    /// Fulfilled once, when the subscriber is closed (`waitUntilClosed`).
    let closed = OneShot<Void>()

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
        // One chunk more than the bound: room for the chunk being filled, or the one just shared.
        // The event lists keep no reserved storage: they are rare, and an empty list without storage
        // is checked without touching memory of this client's own.
        let queue: Queue =
            sharesChunks
            ? .shared(SharedChunks(capacity: capacityChunks + 1))
            : .copies(CopiedChunks(chunks: capacityChunks + 1, chunkBytes: parameters.chunkBytes))
        state = Mutex(State(queue: queue))
    }

    /// Starts loading this subscriber's fields and lock into the cache (see `CaptureDrain`'s prefetch).
    func prefetch() {
        audiogate_prefetch(Unmanaged.passUnretained(self).toOpaque(), 320)
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
