import Synchronization

/// One consumer of a stream's events (a WebSocket connection or a waiting POST).
///
/// The device thread only calls `send`, which never waits: `AsyncStream` buffers the event and
/// the connection's own task writes it to the client.
public final class PlaybackListener: Sendable {
    private static let nextID = Atomic<Int>(1)

    /// Identifies the listener in a stream's mark queue.
    public let id: Int
    /// Events in the order they happened.
    public let events: AsyncStream<PlaybackEvent>
    private let continuation: AsyncStream<PlaybackEvent>.Continuation

    public init() {
        id = Self.nextID.add(1, ordering: .relaxed).oldValue
        (events, continuation) = AsyncStream.makeStream(of: PlaybackEvent.self, bufferingPolicy: .bufferingNewest(4096))
    }

    /// Queues an event for the listener's writer; never blocks.
    public func send(_ event: PlaybackEvent) {
        continuation.yield(event)
    }

    /// Ends the event sequence.
    public func finish() {
        continuation.finish()
    }
}
