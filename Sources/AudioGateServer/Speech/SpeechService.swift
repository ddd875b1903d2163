import AudioGateCore
import ServiceLifecycle
import Synchronization

/// Runs the feeds of `/v1/say` that outlive their request, and ends them all on graceful shutdown.
public final class SpeechService: Service, Sendable {
    private let feeds: AsyncStream<SpeechFeed>
    private let continuation: AsyncStream<SpeechFeed>.Continuation
    /// Per stream name, the end of the last feed handed over: the next one on that stream waits for it.
    private let last = Mutex<[String: OneShot<SpeechFeed.Outcome>]>([:])

    public init() {
        (feeds, continuation) = AsyncStream.makeStream(of: SpeechFeed.self)
    }

    /// Starts `feed`; false once the service has stopped (the caller answers 503).
    func start(_ feed: SpeechFeed) -> Bool {
        var feed = feed
        feed.after = last.withLock { last in
            defer { last[feed.stream.name] = feed.ended }
            return last[feed.stream.name]
        }
        if case .enqueued = continuation.yield(feed) { return true }
        forget(feed)
        return false
    }

    private func forget(_ feed: SpeechFeed) {
        last.withLock { last in
            if last[feed.stream.name] === feed.ended { last[feed.stream.name] = nil }
        }
    }

    public func run() async {
        let feeds = feeds
        let continuation = continuation
        // Cancelling the group on shutdown cancels every feed waiting for room in its stream.
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                for await feed in feeds {
                    group.addTask { [self] in
                        await feed.run()
                        forget(feed)
                    }
                }
            }
        }
        continuation.finish()
        // A feed handed over after the group ended still gives its slot and stream back.
        for await feed in feeds {
            feed.abandon()
            forget(feed)
        }
    }
}
