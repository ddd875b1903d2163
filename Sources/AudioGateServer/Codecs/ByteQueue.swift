import Foundation

/// A bounded queue of compressed bytes between an upload (async, writer) and a decoder thread
/// (blocking reader).
///
/// `@unchecked Sendable`: every stored property is read and written only while `condition` is
/// locked. A condition variable rather than `Mutex` because the reader must sleep until bytes arrive.
final class ByteQueue: @unchecked Sendable {
    /// Most bytes held; a writer waits above it, so a fast sender is slowed by TCP flow control.
    let limit: Int
    private let condition = NSCondition()
    private var bytes: [UInt8] = []
    private var start = 0
    private var finished = false
    private var cancelled = false
    private var readerGone = false

    init(limit: Int = 256 * 1024) {
        self.limit = limit
    }

    /// Appends bytes if there is room (the queue may exceed the limit by one piece). False when full.
    func offer(_ piece: some Collection<UInt8>) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if readerGone || cancelled { return true }
        guard bytes.count - start < limit else { return false }
        if start > 0, start >= bytes.count / 2 {
            bytes.removeFirst(start)
            start = 0
        }
        bytes.append(contentsOf: piece)
        condition.signal()
        return true
    }

    /// Appends bytes, waiting (without blocking a thread) while the queue is full.
    func write(_ piece: some Collection<UInt8> & Sendable) async throws {
        while !offer(piece) {
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The writer has sent everything: the reader sees end of file once the queue is empty.
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    /// The writer went away: the reader stops at once.
    func cancel() {
        condition.lock()
        cancelled = true
        condition.signal()
        condition.unlock()
    }

    /// The reader stopped (decoded everything it wanted or failed); further writes are dropped.
    func closeReader() {
        condition.lock()
        readerGone = true
        condition.unlock()
    }

    /// True once the reader stopped.
    var isReaderGone: Bool {
        condition.lock()
        defer { condition.unlock() }
        return readerGone
    }

    /// True once the writer went away.
    var isCancelled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return cancelled
    }

    /// Outcome of a blocking read.
    enum ReadResult: Equatable {
        case bytes(Int)
        case endOfFile
        case cancelled
    }

    /// Blocks until bytes, the end or a cancel arrive; copies up to `buffer.count` bytes.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if cancelled { return .cancelled }
            let available = bytes.count - start
            if available > 0 {
                let count = min(available, buffer.count)
                bytes.withUnsafeBytes { source in
                    buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[start..<(start + count)]))
                }
                start += count
                return .bytes(count)
            }
            if finished { return .endOfFile }
            condition.wait()
        }
    }
}
