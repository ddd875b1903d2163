import AudioGateCore
import NIOCore

extension CaptureSubscriber {
    /// Waits for the next event; chunk bytes are copied into `buffer` (resized to one chunk).
    ///
    /// Returns nil once the subscriber is closed or the calling task is cancelled.
    public func next(into buffer: inout [UInt8]) async -> Event? {
        if buffer.count != chunkBytes { buffer = [UInt8](repeating: 0, count: chunkBytes) }
        while true {
            if Task.isCancelled { return nil }
            let event = buffer.withUnsafeMutableBufferPointer { take(into: $0) }
            if let event { return event }
            await state.waitForWork { close() }
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
            if startingDrain { state.drainStarted() }
            var frame: ByteBuffer?
            let event = take(into: lent.buffer, state: &state, frame: &frame)
            return (event, state.hasWork, frame)
        }
    }

    private func take(
        into buffer: UnsafeMutableBufferPointer<UInt8>, state: inout State, frame: inout ByteBuffer?
    ) -> Event?? {
        if state.isClosed { return .some(nil) }
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
        if let music = state.pendingMusic {
            state.pendingMusic = nil
            return Event.music(music)
        }
        if let level = state.pendingLevel {
            state.pendingLevel = nil
            return Event.level(rms: level.rms, peak: level.peak)
        }
        let chunkBytes = chunkBytes
        let stamp = state.withShared { queue -> (start: UInt64, ready: UInt64)? in
            guard let chunk = queue.chunks.popFirst() else { return nil }
            frame = chunk.frame
            return (chunk.start, chunk.ready)
        } ?? state.withCopies { queue -> (start: UInt64, ready: UInt64)? in
            guard !queue.stamps.isEmpty else { return nil }
            // Exactly one chunk: the caller's buffer may be larger.
            queue.bytes.read(into: UnsafeMutableBufferPointer(rebasing: buffer[0..<chunkBytes]))
            var stamp = CopiedChunks.Stamp(start: 0, ready: 0)
            withUnsafeMutablePointer(to: &stamp) {
                _ = queue.stamps.read(into: UnsafeMutableBufferPointer(start: $0, count: 1))
            }
            return (stamp.start, stamp.ready)
        }
        if let stamp = stamp ?? nil {
            let seq = state.handedOut
            state.handedOut += 1
            return Event.chunk(seq: seq, timestamp: stamp.start, ready: stamp.ready)
        }
        if case .finishing = state.lifecycle { return .some(nil) }
        return nil
    }

    /// Starts a writer's draining (its start message is out) and says whether anything is queued.
    func goLive() -> Bool {
        state.withLock { state in
            state.goLive()
            return state.hasWork
        }
    }

    /// Called by the drain before it takes events: appends from here on request a new drain.
    func drainStarted() {
        state.withLock { $0.drainStarted() }
    }

    /// Returns once the subscriber is closed (by the hub, the connection or graceful shutdown).
    func waitUntilClosed() async {
        await closed.waitIgnoringCancellation()
    }

    /// Takes no more audio, but hands out the complete chunks already queued before `next` returns nil:
    /// a recording stopped by request keeps everything captured up to the request.
    public func finish() {
        let wake = state.withLock { $0.finish() }
        perform(wake, nil)
    }

    /// Ends the stream: a waiting `next` returns nil and appends are ignored.
    public func close() {
        let wake = state.withLock { $0.close() }
        perform(wake, nil)
        closed.fulfill(())
    }
}
