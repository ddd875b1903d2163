import AudioGateCore
import AudioGateDevices

extension PlaybackStream {
    /// Playback thread: takes up to `frames` frames into `destination` (interleaved, `format`
    /// channels) for the period starting at device frame `startFrame`; returns the frames taken.
    ///
    /// Allocation-free: copies, counters and writes into preallocated records.
    func pull(into destination: UnsafeMutableBufferPointer<Float>, frames: Int, format: AudioFormat, startFrame: UInt64) -> Int {
        // The scratch buffer belongs to the calling thread for the whole call; the ring only copies into it.
        let handoff = LentBuffer(destination)
        return queue.withLock { queue in
            let destination = handoff.buffer
            if queue.rate != format.rate || queue.channels != format.channels {
                // Audio resampled for another hardware format would play at the wrong pitch; the
                // next write rebuilds the queue for the new format.
                if !queue.ring.isEmpty {
                    let skipped = UInt64(queue.ring.count / max(queue.channels, 1))
                    queue.flushedByReformat += skipped
                    queue.renderedTotal += skipped
                    queue.ring.removeAll()
                }
                return 0
            }
            if !queue.active {
                guard !queue.ring.isEmpty else { return 0 }
                let buffered = UInt64(queue.ring.count / format.channels)
                let needed = UInt64(format.rate) * Self.prebufferNanoseconds / 1_000_000_000
                if buffered < needed, !queue.startNow, let since = queue.startPendingSince,
                    MonotonicClock.nowNanoseconds() &- since < Self.prebufferNanoseconds
                {
                    return 0
                }
                queue.startNow = false
                queue.startPendingSince = nil
            }
            let wanted = frames * format.channels
            let taken = queue.ring.read(into: UnsafeMutableBufferPointer(rebasing: destination[0..<wanted])) / format.channels
            if taken > 0 {
                let first = queue.renderedTotal
                if queue.recordCount == queue.records.count {
                    // The device has not reported progress for many periods: count the oldest as heard.
                    let oldest = queue.records[queue.recordHead]
                    queue.playedTotal = max(queue.playedTotal, oldest.streamStart + oldest.count)
                    queue.recordHead = (queue.recordHead + 1) % queue.records.count
                    queue.recordCount -= 1
                }
                let slot = (queue.recordHead + queue.recordCount) % queue.records.count
                queue.records[slot] = Record(deviceStart: startFrame, streamStart: first, count: UInt64(taken))
                queue.recordCount += 1
                queue.renderedTotal += UInt64(taken)
                for index in queue.probes.indices where queue.probes[index].deviceFrame == nil {
                    let position = queue.probes[index].position
                    if position < queue.renderedTotal {
                        queue.probes[index].deviceFrame = startFrame + (position > first ? position - first : 0)
                    }
                }
                queue.active = true
            }
            if taken < frames && queue.active {
                queue.active = false
                queue.dry = (queue.renderedTotal, MonotonicClock.nowNanoseconds())
            }
            return taken
        }
    }

    /// Playback thread: the card has played everything up to device frame `playedDevice`. Fires
    /// marks and `drained` whose audio has been heard and finishes latency measurements.
    func progress(playedDevice: UInt64, rate: Int) {
        var now: UInt64 = 0
        queue.withLock { queue in
            while queue.recordCount > 0 {
                let record = queue.records[queue.recordHead]
                if record.deviceStart + record.count <= playedDevice {
                    queue.playedTotal = max(queue.playedTotal, record.streamStart + record.count)
                    queue.recordHead = (queue.recordHead + 1) % queue.records.count
                    queue.recordCount -= 1
                } else {
                    if record.deviceStart < playedDevice {
                        queue.playedTotal = max(queue.playedTotal, record.streamStart + (playedDevice - record.deviceStart))
                    }
                    break
                }
            }
            let allHeard = queue.recordCount == 0 && queue.ring.isEmpty
            if queue.recordCount == 0 { queue.playedTotal = max(queue.playedTotal, queue.renderedTotal) }
            // A mark may sit a few frames past what the resampler has released; once everything is
            // heard nothing before it is left to play.
            while let mark = queue.marks.first, mark.position <= queue.playedTotal || allHeard {
                queue.marks.removeFirst()
                for listener in queue.listeners where listener.id == mark.listener {
                    listener.send(.mark(name: mark.name))
                }
            }
            if allHeard && queue.drainPending {
                queue.drainPending = false
                for listener in queue.listeners { listener.send(.drained) }
            }
            let framesToNanoseconds = { (frames: UInt64) -> UInt64 in frames * 1_000_000_000 / UInt64(max(rate, 1)) }
            while let probe = queue.probes.first, let deviceFrame = probe.deviceFrame, deviceFrame <= playedDevice {
                queue.probes.removeFirst()
                if now == 0 { now = MonotonicClock.nowNanoseconds() }
                let heardAt = now &- framesToNanoseconds(playedDevice - deviceFrame)
                metrics.recordLatency(nanoseconds: Int64(bitPattern: heardAt &- probe.startNanoseconds))
            }
            if let clearProbe = queue.clearProbe, clearProbe.deviceEnd <= playedDevice {
                queue.clearProbe = nil
                if now == 0 { now = MonotonicClock.nowNanoseconds() }
                let silentAt = now &- framesToNanoseconds(playedDevice - clearProbe.deviceEnd)
                let elapsed = silentAt > clearProbe.startNanoseconds ? silentAt - clearProbe.startNanoseconds : 0
                metrics.recordClearToSilence(nanoseconds: Int64(elapsed))
            }
        }
    }
}
