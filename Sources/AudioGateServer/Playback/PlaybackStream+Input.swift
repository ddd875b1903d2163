import AudioGateCore
import AudioGateDevices

extension PlaybackStream {
    /// What a producer learns before it converts a slice.
    struct Admission {
        /// Whether the queue has room for another slice.
        var hasRoom: Bool
        /// How many clears there have been: a clear since the producer's last look resets its converter.
        var clears: Int
    }

    /// Whether the queue has room, and how many clears there have been.
    func admission() -> Admission {
        state.withLock { state in
            state.updateQueue { queue, timeline in Admission(hasRoom: queue.hasRoom, clears: timeline.clears) }
        }
    }

    /// Queues converted samples of `mix` (a slice admitted by `admission`); returns whether the
    /// queue still has room. With `unlessClearedSince`, queues nothing (and returns nil) when the
    /// stream was cleared since `clears` had that value: the check and the copy are one step.
    func append(_ samples: UnsafeBufferPointer<Float>, mix: AudioFormat, unlessClearedSince clears: Int?) -> Bool? {
        let now = MonotonicClock.nowNanoseconds()
        // The producer's converter owns the samples for the duration of the copy.
        let handoff = LentBuffer(samples)
        let appended = state.withLock { state in
            state.updateQueue { queue, timeline in
                if let clears, timeline.clears != clears { return Appended(hasRoom: nil) }
                var wakes = WaiterList.Wakes.none
                if !queue.matches(mix) {
                    let dropped = queue.reformat(mix)
                    timeline.skip(UInt64(dropped.frames))
                    wakes = dropped.wakes
                }
                let underrun = timeline.queued(queue.write(handoff.readOnly), at: now)
                return Appended(hasRoom: queue.hasRoom, endedUnderrun: underrun, wakes: wakes)
            }
        }
        appended.wakes.run()
        if appended.endedUnderrun { metrics.underruns.increment() }
        return appended.hasRoom
    }

    /// What an append did under the stream's lock, acted on after it.
    private struct Appended {
        /// Whether the queue still has room; nil when a clear came first and nothing was queued.
        var hasRoom: Bool?
        /// The stream had run dry while playing: the append ended an underrun.
        var endedUnderrun = false
        var wakes: WaiterList.Wakes = .none
    }

    /// The position just after what is queued plus `pending` frames a producer's converter still
    /// holds.
    func position(pending: UInt64) -> UInt64 {
        state.withLock { $0.timeline.queuedTotal + pending }
    }

    /// Nothing more is coming soon from one producer (the end of an upload): running dry after
    /// what is queued is no underrun, and it starts playing without the jitter buffer.
    func placeBoundary() {
        state.withLock { state in
            state.timeline.placeBoundary(at: state.timeline.queuedTotal, queueEmpty: state.playout.isEmpty)
        }
    }

    /// Asks for `listener` to be told when everything queued so far, and `pending` frames a
    /// producer's converter still holds, has been heard. False, and nothing placed, when
    /// `maxPendingMarks` marks already wait: marks are not back-pressured like audio, so a client
    /// sending them in a loop would otherwise grow the stream without bound.
    func addMark(_ name: String, listener: PlaybackListener, pending: UInt64) -> Bool {
        state.withLock { state in
            state.timeline.addMark(
                name, listener: listener.id, at: state.timeline.queuedTotal + pending, limit: maxPendingMarks,
                queueEmpty: state.playout.isEmpty)
        }
    }

    /// Measures the time from `startNanoseconds` until the frame at `position` is heard.
    func addLatencyProbe(position: UInt64, startNanoseconds: UInt64) {
        state.withLock { $0.timeline.addProbe(position: position, startNanoseconds: startNanoseconds) }
    }

    /// Flushes the stream (barge-in): queued audio is dropped, what the card already has is heard.
    ///
    /// A timed stream's producer starts its next chunk afresh. Returns what it played since the
    /// previous clear and what it flushed; every listener gets `cleared`.
    /// `measured: false` leaves it out of the clear-to-silence figures (a producer's own restart);
    /// `id` is echoed in `cleared`, so the client that sent the clear knows its own answer.
    @discardableResult
    func clear(measured: Bool = true, id: String? = nil) -> ClearResult {
        let now = MonotonicClock.nowNanoseconds()
        let cleared = state.withLock { state in
            let rate = Double(max(state.playout.queued.rate, 1))
            if case .queued(let queue) = state.playout, !state.paused, !queue.isEmpty {
                // Stopping mid-wave clicks: what the card would have played next fades out instead.
                state.fadeTail = FadeTail(queue.head(frames: queue.rate * FadeTail.milliseconds / 1000), channels: queue.channels)
            }
            let flushed = state.updatePlayout(
                queued: { queue, _ in queue.removeAll() },
                timed: { timed, _ in PlayoutQueue.Freed(frames: timed.frames, wakes: timed.reset()) })
            let played = state.timeline.clear(flushed: UInt64(flushed.frames), at: now, measured: measured)
            let ms = { (frames: UInt64) in Int((Double(frames) * 1000 / rate).rounded()) }
            let result = ClearResult(playedMilliseconds: ms(played), flushedMilliseconds: ms(UInt64(flushed.frames)))
            let event = PlaybackEvent.cleared(
                playedMilliseconds: result.playedMilliseconds, flushedMilliseconds: result.flushedMilliseconds,
                renderedFrame: state.timeline.clearBase, id: id)
            let delivery = state.outbox.post(.init(sends: [.init(listener: nil, event: event)], listeners: state.listeners))
            return Cleared(result: result, delivery: delivery, wakes: flushed.wakes)
        }
        cleared.wakes.run()
        deliver(cleared.delivery)
        return cleared.result
    }

    /// What a clear did under the stream's lock, told to listeners and producers after it.
    private struct Cleared {
        var result: ClearResult
        /// `cleared` for every listener, when this clear is the one to send the outbox's events.
        var delivery: PlaybackOutbox.Batch?
        var wakes: WaiterList.Wakes
    }

    /// Holds the stream where it is (`paused`) or plays it on; its queue, marks and position are kept.
    func setPaused(_ paused: Bool) {
        state.withLock { $0.paused = paused }
    }

    /// Whether a client's `pause` holds the stream.
    var isPaused: Bool { state.withLock { $0.paused } }

    // MARK: - Waiting for room

    /// Registers `wake` for when the queue falls to its low watermark; nil when it has room now.
    func whenRoom(_ wake: @escaping WaiterList.Wake) -> Int? {
        state.withLock { state in
            state.updatePlayout(queued: { queue, _ in queue.waitForRoom(wake) }, timed: { timed, _ in timed.waitForRoom(wake) })
        }
    }

    /// Forgets a `whenRoom` registration whose producer stopped waiting.
    func cancelWait(_ id: Int) {
        state.withLock { state in
            state.updatePlayout(queued: { queue, _ in queue.cancelWait(id) }, timed: { timed, _ in timed.cancelWait(id) })
        }
    }

    /// Suspends while the queue is above its high watermark, until the device takes it to the low one.
    func waitForRoom() async throws {
        let room = OneShot<Void>()
        guard let id = whenRoom({ room.fulfill(()) }) else { return }
        do {
            try await room.wait()
        } catch {
            cancelWait(id)
            throw error
        }
    }

    /// Blocks the calling producer thread the same way; `wakeup` is also signalled when its work is
    /// cancelled, and `isCancelled` says so.
    func waitForRoom(wakeup: ThreadWakeup, isCancelled: () -> Bool) throws(CancellationError) {
        while true {
            if isCancelled() { throw CancellationError() }
            guard let id = whenRoom({ wakeup.signal() }) else { return }
            wakeup.wait()
            cancelWait(id)
        }
    }
}

/// What a clear of a stream flushed, in milliseconds of the mix format.
struct ClearResult: Sendable, Equatable {
    /// Played since the previous clear.
    var playedMilliseconds: Int
    /// Dropped unplayed.
    var flushedMilliseconds: Int
}
