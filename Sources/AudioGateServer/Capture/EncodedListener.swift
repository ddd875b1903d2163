import NIOCore
import Synchronization

/// One client of a shared `CaptureEncoder`: a bounded queue of references to the encoder's pieces
/// (nothing is copied per client), awaited by the client's writer task.
///
/// The encoder's pump offers pieces and never waits on the client; beyond `capacity` pieces the
/// oldest go and the client learns how much audio it lost.
final class EncodedListener: Sendable {
    /// What the writer task is handed next.
    enum Event: Sendable {
        /// Bytes to send as they are: stream headers, a page, a frame or one Opus packet.
        case piece(ByteBuffer)
        /// Audio dropped because this client fell behind, in milliseconds.
        case overrun(droppedMilliseconds: Int)
    }

    struct State: AwaitedState {
        var pieces = CircularBuffer<(bytes: ByteBuffer, frames: Int)>()
        var droppedFrames = 0
        var waiter: CheckedContinuation<Void, Never>?
        /// The encoder ended: what is queued is still handed out.
        var finished = false
        var closed = false

        var hasWork: Bool { closed || finished || !pieces.isEmpty || droppedFrames > 0 }
    }

    /// Pieces queued before the oldest is dropped.
    let capacity: Int
    /// The encoder's rate, to report drops in milliseconds.
    let rate: Int
    private let state = Mutex(State())

    init(capacity: Int, rate: Int) {
        self.capacity = max(capacity, 2)
        self.rate = rate
    }

    /// Queues a piece covering `frames` frames (0 for headers, which are never dropped).
    func offer(_ piece: ByteBuffer, frames: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.closed, !state.finished else { return nil }
            state.pieces.append((piece, frames))
            if state.pieces.count > capacity, let index = state.pieces.firstIndex(where: { $0.frames > 0 }) {
                state.droppedFrames += state.pieces.remove(at: index).frames
            }
            return state.takeWaiter()
        }
        waiter?.resume()
    }

    /// The encoder ended (the stream is complete, or capture stopped): `next` returns nil once
    /// the queue is empty.
    func finish() {
        let waiter = state.withLock { state in
            state.finished = true
            return state.takeWaiter()
        }
        waiter?.resume()
    }

    /// The client went away: `next` returns nil at once.
    func close() {
        let waiter = state.withLock { state in
            state.closed = true
            return state.takeWaiter()
        }
        waiter?.resume()
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Waits for the next event; nil once closed, finished and drained, or the task is cancelled.
    func next() async -> Event? {
        while true {
            if Task.isCancelled { return nil }
            let taken = state.withLock { state -> Event?? in
                if state.closed { return .some(nil) }
                if state.droppedFrames > 0 {
                    let milliseconds = state.droppedFrames * 1000 / max(rate, 1)
                    state.droppedFrames = 0
                    return .some(.overrun(droppedMilliseconds: milliseconds))
                }
                if let piece = state.pieces.popFirst() { return .some(.piece(piece.bytes)) }
                if state.finished { return .some(nil) }
                return nil
            }
            if let taken { return taken }
            await state.waitForWork { close() }
        }
    }
}
