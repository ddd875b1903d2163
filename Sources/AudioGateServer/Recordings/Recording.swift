import AudioGateCore
import NIOPosix
import Synchronization

/// A recording the server knows: running (a capture subscriber feeding a `RecordingWriter`) or
/// finished (found on disk, or ended in this run).
final class Recording: Sendable {
    /// Chunk length of a recording's capture subscription.
    static let chunkMilliseconds = 100
    /// Audio a recording may fall behind (a slow disk) before captured audio is dropped.
    static let queueMilliseconds = 10_000

    let id: String
    /// What readers see; refreshed after every write.
    private let published: Mutex<RecordingInfo>
    /// The writer while running, nil once finished.
    private let writer: Mutex<RecordingWriter?>
    private let subscriber: CaptureSubscriber?
    private let stopReason = Mutex<String?>(nil)
    /// Fulfilled once the recording has finished and its files are final.
    private let completion = OneShot<Void>()

    /// A finished recording.
    init(finished info: RecordingInfo) {
        id = info.id
        published = Mutex(info)
        writer = Mutex(nil)
        subscriber = nil
        completion.fulfill(())
    }

    /// A recording about to run.
    init(writer: sending RecordingWriter, subscriber: CaptureSubscriber) {
        let info = writer.info
        id = info.id
        published = Mutex(info)
        self.writer = Mutex(writer)
        self.subscriber = subscriber
    }

    /// The newest state.
    var info: RecordingInfo { published.withLock { $0 } }

    /// Whether it is still capturing.
    var isRunning: Bool { completion.value == nil }

    /// Captures into the writer until stopped, `max_seconds` is reached, or writing fails.
    func run(hub: CaptureHub, pool: NIOThreadPool) async {
        guard let subscriber else { return }
        var buffer: [UInt8] = []
        var gapReason: String?
        var failure: RecordingError?
        var reachedLimit = false
        while failure == nil, !reachedLimit, let event = await subscriber.next(into: &buffer) {
            switch event {
            case .chunk(_, let timestamp, _):
                let bytes = buffer
                let reason = gapReason
                switch await perform(on: pool, { writer throws(RecordingError) in
                    let gap = try writer.write(bytes, timestamp: timestamp, gapReason: reason)
                    return (gap, writer.reachedLimit)
                }) {
                case .success(let (gap, reached)):
                    // The loss's event comes before the first chunk after it; the reason waits
                    // for the gap (the timestamp jump) it explains.
                    if gap { gapReason = nil }
                    reachedLimit = reached
                case .failure(let error): failure = error
                }
            case .overrun:
                if gapReason == nil { gapReason = "overrun" }
            case .device(.lost):
                gapReason = "device_lost"
            case .device(.restored), .level, .voice, .music:
                break
            }
        }
        await hub.leave(subscriber)
        let state: RecordingInfo.State = failure != nil ? .failed : reachedLimit ? .completed : .stopped
        let reason = stopReason.withLock { $0 } ?? "shutdown"
        let finalFailure = failure
        _ = await perform(on: pool) { writer throws(RecordingError) in
            writer.finish(state, failure: finalFailure, stopReason: reason)
        }
        writer.withLock { $0 = nil }
        completion.fulfill(())
    }

    /// Asks a running recording to stop (`reason` is `request` or `shutdown`); returns at once.
    func requestStop(reason: String) {
        stopReason.withLock { if $0 == nil { $0 = reason } }
        subscriber?.finish()
    }

    /// Stops a running recording and waits until its files are final.
    func stop(reason: String) async {
        requestStop(reason: reason)
        await completion.waitIgnoringCancellation()
    }

    /// Runs blocking writer work on the thread pool (inline when the pool has shut down) and
    /// publishes the writer's state afterwards.
    private func perform<T: Sendable>(
        on pool: NIOThreadPool, _ body: @escaping @Sendable (RecordingWriter) throws(RecordingError) -> T
    ) async -> Result<T, RecordingError> {
        let work: @Sendable () -> Result<T, RecordingError> = { [self] in
            writer.withLock { writer -> Result<T, RecordingError> in
                guard let writer else { return .failure(RecordingError(.io, "the recording has already ended")) }
                let result: Result<T, RecordingError>
                do throws(RecordingError) {
                    result = .success(try body(writer))
                } catch {
                    result = .failure(error)
                }
                let info = writer.info
                published.withLock { $0 = info }
                return result
            }
        }
        do {
            return try await pool.runIfActive(work)
        } catch {
            return work()
        }
    }
}
