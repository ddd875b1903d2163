import AudioGateCore
import Synchronization

/// A bounded queue of compressed bytes between a writer (an upload's task or a socket's event
/// loop) and a decoder thread (the blocking reader).
///
/// The reader sleeps on its `ThreadWakeup` until bytes, the end or a cancel arrive; a writer above
/// the limit waits until the reader has taken the queue below half of it, woken the way it asked
/// (a task, or a job on its event loop).
final class ByteQueue: Sendable {
    /// Most bytes held; a writer waits above it, so a fast sender is slowed by TCP flow control.
    let limit: Int
    /// Wakes the reader; its owner may also signal it (a decoder thread that waits for room in a
    /// playback stream sleeps on the same wakeup, so a cancel reaches it there too).
    let readerWakeup: ThreadWakeup
    private let state: Mutex<State>

    private struct State {
        var bytes: [UInt8] = []
        var start = 0
        var finished = false
        var cancelled = false
        var readerGone = false
        var writers = WaiterList()

        var count: Int { bytes.count - start }
    }

    init(limit: Int = 256 * 1024, readerWakeup: ThreadWakeup = ThreadWakeup()) {
        self.limit = limit
        self.readerWakeup = readerWakeup
        state = Mutex(State())
    }

    /// Appends bytes if there is room (the queue may exceed the limit by one piece). False when full.
    func offer(_ piece: some Collection<UInt8>) -> Bool {
        let taken = state.withLock { state -> Bool in
            if state.readerGone || state.cancelled { return true }
            guard state.count < limit else { return false }
            if state.start > 0, state.start >= state.bytes.count / 2 {
                state.bytes.removeFirst(state.start)
                state.start = 0
            }
            state.bytes.append(contentsOf: piece)
            return true
        }
        if taken { readerWakeup.signal() }
        return taken
    }

    /// Registers `wake` for when the reader has made room; nil when there is room now.
    func whenRoom(_ wake: @escaping WaiterList.Wake) -> Int? {
        state.withLock { state in
            state.count < limit || state.readerGone || state.cancelled ? nil : state.writers.add(wake)
        }
    }

    /// Appends bytes, suspending while the queue is full.
    func write(_ piece: some Collection<UInt8> & Sendable) async throws {
        while !offer(piece) {
            let room = OneShot<Void>()
            guard let id = whenRoom({ room.fulfill(()) }) else { continue }
            do {
                try await room.wait()
            } catch {
                state.withLock { _ = $0.writers.remove(id) }
                throw error
            }
        }
    }

    /// The writer has sent everything: the reader sees end of file once the queue is empty.
    func finish() {
        state.withLock { $0.finished = true }
        readerWakeup.signal()
    }

    /// The writer went away: the reader stops at once.
    func cancel() {
        let writers = state.withLock { state in
            state.cancelled = true
            return state.writers.takeAll()
        }
        writers.run()
        readerWakeup.signal()
    }

    /// The reader stopped (decoded everything it wanted or failed); further writes are dropped.
    func closeReader() {
        let writers = state.withLock { state in
            state.readerGone = true
            return state.writers.takeAll()
        }
        writers.run()
    }

    /// True once the reader stopped.
    var isReaderGone: Bool { state.withLock { $0.readerGone } }

    /// True once the writer went away.
    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Outcome of a blocking read.
    enum ReadResult: Equatable {
        case bytes(Int)
        case endOfFile
        case cancelled
    }

    /// Blocks until bytes, the end or a cancel arrive; copies up to `buffer.count` bytes.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        let limit = limit
        // The decoder's buffer, written only inside the lock on the decoder's thread.
        let handoff = LentBuffer(buffer.assumingMemoryBound(to: UInt8.self))
        while true {
            let (result, writers) = state.withLock { state -> (ReadResult?, WaiterList.Wakes) in
                if state.cancelled { return (.cancelled, .none) }
                let available = state.count
                if available > 0 {
                    let count = min(available, buffer.count)
                    let start = state.start
                    state.bytes.withUnsafeBytes { source in
                        UnsafeMutableRawBufferPointer(handoff.buffer).copyMemory(from: UnsafeRawBufferPointer(rebasing: source[start..<(start + count)]))
                    }
                    state.start += count
                    let wakes = !state.writers.isEmpty && state.count <= limit / 2 ? state.writers.takeAll() : .none
                    return (.bytes(count), wakes)
                }
                if state.finished { return (.endOfFile, .none) }
                return (nil, .none)
            }
            writers.run()
            if let result { return result }
            readerWakeup.wait()
        }
    }
}
