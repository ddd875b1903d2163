import AudioGateCore
import NIOCore

extension CaptureSubscriber {
    /// Appends encoded frames whose first frame was captured at `start` (monotonic ns).
    ///
    /// Called on the capture thread: takes this subscriber's lock briefly and never waits on the client.
    /// With `drains` (the capture thread's period batch) a writer's drain is only collected, and
    /// scheduled once for the whole period; without (the voice thread) it is scheduled at once.
    func append(
        _ bytes: UnsafeBufferPointer<UInt8>, start: Double, nanosecondsPerFrame: Double, ready: UInt64,
        drains: UnsafeMutablePointer<CaptureDrains>? = nil
    ) {
        let bytesPerFrame = parameters.format.bytesPerFrame
        let chunkFrames = parameters.chunkFrames
        let chunkBytes = chunkBytes
        let capacityChunks = capacityChunks
        let lent = LentBuffer(bytes)
        let hasWriter = writer != nil
        let wake = state.withLock { state -> Wake in
            let bytes = lent.readOnly
            guard state.isOpen, let base = bytes.baseAddress else { return .none }
            let counts = state.withCopies { queue -> (completed: Int, dropped: Int) in
                var offset = 0
                var completed = 0
                var dropped = 0
                while offset < bytes.count {
                    if queue.openFill == 0 {
                        let frame = Double(offset / bytesPerFrame)
                        queue.openStart = UInt64(max(0, start + frame * nanosecondsPerFrame))
                    }
                    let take = min(chunkBytes - queue.openFill, bytes.count - offset)
                    queue.bytes.write(UnsafeBufferPointer(start: base + offset, count: take))
                    queue.openFill += take
                    offset += take
                    guard queue.openFill == chunkBytes else { continue }
                    queue.openFill = 0
                    completed += 1
                    var stamp = CopiedChunks.Stamp(start: queue.openStart, ready: ready)
                    withUnsafePointer(to: &stamp) { _ = queue.stamps.write(UnsafeBufferPointer(start: $0, count: 1)) }
                    if queue.stamps.count > capacityChunks {
                        // The oldest whole chunk goes, so the queue never holds more than its bound.
                        queue.bytes.discard(chunkBytes)
                        queue.stamps.discard(1)
                        dropped += 1
                    }
                }
                return (completed, dropped)
            }
            guard let counts, counts.completed > 0 else { return .none }
            state.completedChunks += UInt64(counts.completed)
            for _ in 0..<counts.dropped { state.countDroppedChunk(frames: chunkFrames) }
            return state.wake(hasWriter: hasWriter)
        }
        perform(wake, drains)
    }

    /// Queues a lane's item (on the event loop); returns whether the subscriber must now be drained.
    func offer(_ item: CaptureLane.Item) -> Bool {
        let chunkFrames = parameters.chunkFrames
        let capacityChunks = capacityChunks
        return state.withLock { state in
            guard state.isOpen else { return false }
            switch item {
            case .chunk(let chunk):
                let dropped = state.withShared { queue -> Bool in
                    queue.chunks.append(chunk)
                    guard queue.chunks.count > capacityChunks else { return false }
                    queue.chunks.removeFirst()
                    return true
                }
                state.completedChunks += 1
                if dropped == true { state.countDroppedChunk(frames: chunkFrames) }
            case .device(let device):
                guard state.queueDevice(device) else { return false }
            }
            return state.requestDrain()
        }
    }

    /// Takes a lane's chunk to be written at once (on the event loop), when nothing is queued
    /// before it and the writer is live: the chunk never enters the queue, so the steady state
    /// touches no queue storage. False: `offer` it instead.
    func takeDirect() -> Bool {
        state.withLock { state in
            guard state.takesDirect else { return false }
            state.completedChunks += 1
            state.handedOut += 1
            return true
        }
    }

    /// Queues a device event (deduplicated against the last queued one).
    func deliver(_ device: DeviceMessage.State, drains: UnsafeMutablePointer<CaptureDrains>? = nil) {
        let hasWriter = writer != nil
        let wake = state.withLock { state -> Wake in
            guard state.queueDevice(device) else { return .none }
            return state.wake(hasWriter: hasWriter)
        }
        perform(wake, drains)
    }

    /// Offers the newest level reading (replacing one not yet sent).
    func deliverLevel(rms: Double, peak: Double, drains: UnsafeMutablePointer<CaptureDrains>? = nil) {
        let hasWriter = writer != nil
        let wake = state.withLock { state -> Wake in
            state.pendingLevel = (rms, peak)
            return state.wake(hasWriter: hasWriter)
        }
        perform(wake, drains)
    }

    /// Offers the newest `music` message (replacing one not yet sent).
    func deliverMusic(_ json: String) {
        let hasWriter = writer != nil
        let wake = state.withLock { state -> Wake in
            state.pendingMusic = json
            return state.wake(hasWriter: hasWriter)
        }
        perform(wake, nil)
    }

    /// Queues a voice activity event (from the voice processing thread).
    func deliverVoice(speech: Bool, timestamp: UInt64) {
        let hasWriter = writer != nil
        let wake = state.withLock { state -> Wake in
            // A client that never reads must not grow this list: only the newest few matter.
            if state.voiceEvents.count >= 8 { state.voiceEvents.removeFirst() }
            state.voiceEvents.append((speech, timestamp))
            return state.wake(hasWriter: hasWriter)
        }
        perform(wake, nil)
    }

    /// Does what a transition asked for, outside the lock: resumes the waiting task, or hands the
    /// subscriber to its event loop's drain (into the period's batch, or scheduled now).
    func perform(_ wake: Wake, _ drains: UnsafeMutablePointer<CaptureDrains>?) {
        switch wake {
        case .none:
            return
        case .resume(let waiter):
            waiter.resume()
        case .drain:
            guard let writer else { return }
            if let drains {
                drains.pointee.add(self, to: writer.drain)
            } else {
                writer.drain.request(self)
            }
        }
    }
}
