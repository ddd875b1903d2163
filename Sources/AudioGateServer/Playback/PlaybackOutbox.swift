/// A stream's events on their way to its listeners, in the order the stream's lock made them.
///
/// Sending happens outside the lock, so two threads that each made an event (a clear on one
/// socket, another socket's clear, the device thread's heard mark) could otherwise hand them over
/// in either order. Whoever posts to an idle outbox becomes its one deliverer and sends until it
/// is empty again; a post while someone delivers only queues, so nobody waits on anybody.
struct PlaybackOutbox {
    /// Events made in one transition and the listeners there were when it ran.
    struct Batch {
        var sends: [PlaybackTimeline.Send]
        var listeners: [PlaybackListener]

        /// Hands each event to its listener, or to every listener; never blocks.
        func send() {
            for send in sends {
                for listener in listeners where send.listener == nil || send.listener == listener.id {
                    listener.send(send.event)
                }
            }
        }
    }

    private var pending: [Batch] = []
    private var delivering = false

    /// Under the lock: queues `batch`. Returns it back when the caller is now the deliverer and
    /// must send it, then `take` until nil.
    mutating func post(_ batch: Batch) -> Batch? {
        guard delivering else {
            delivering = true
            return batch
        }
        pending.append(batch)
        return nil
    }

    /// Under the lock: what was posted while the deliverer sent, oldest first; nil (and the
    /// outbox idle again) when nothing was.
    mutating func take() -> [Batch]? {
        guard !pending.isEmpty else {
            delivering = false
            return nil
        }
        let taken = pending
        pending = []
        return taken
    }
}

extension PlaybackStream {
    /// Outside the lock: sends `batch`, then whatever other threads posted meanwhile.
    func deliver(_ batch: PlaybackOutbox.Batch?) {
        guard let batch else { return }
        batch.send()
        while let more = state.withLock({ $0.outbox.take() }) {
            for batch in more { batch.send() }
        }
    }
}
