import AudioGateCore
import AudioGateDevices

extension PlaybackStream {
    /// Playback thread: takes up to `frames` frames into `destination` (interleaved, `format`
    /// channels) for the period starting at device frame `startFrame`; returns the frames taken.
    ///
    /// Allocation-free unless producers wait for room: then they are woken, outside the lock.
    func pull(into destination: UnsafeMutableBufferPointer<Float>, frames: Int, format: AudioFormat, startFrame: UInt64) -> Int {
        // The scratch buffer belongs to the calling thread for the whole call; the ring only copies into it.
        let handoff = LentBuffer(destination)
        let (taken, wakes) = state.withLock { state -> (Int, WaiterList.Wakes) in
            if !state.queue.matches(format) {
                // Audio resampled for another hardware format would play at the wrong pitch; the
                // next write rebuilds the queue for the new format.
                guard !state.queue.isEmpty else { return (0, .none) }
                let (dropped, wakes) = state.queue.removeAll()
                state.timeline.skip(dropped)
                return (0, wakes)
            }
            if !state.timeline.active {
                guard !state.queue.isEmpty else { return (0, .none) }
                let needed = UInt64(format.rate) * PlaybackTimeline.prebufferNanoseconds / 1_000_000_000
                guard state.timeline.starts(buffered: UInt64(state.queue.frames), needed: needed) else { return (0, .none) }
            }
            let (taken, wakes) = state.queue.read(into: handoff.buffer, frames: frames)
            state.timeline.rendered(taken, of: frames, startFrame: startFrame)
            return (taken, wakes)
        }
        wakes.run()
        return taken
    }

    /// Playback thread: the card has played everything up to device frame `playedDevice`. Fires
    /// marks and `drained` whose audio has been heard and finishes latency measurements.
    func progress(playedDevice: UInt64, rate: Int) {
        var now: UInt64 = 0
        // Events are sent after the lock is let go; an empty array does not allocate, so a period
        // without a mark or a drain costs nothing here.
        let events = state.withLock { state -> [(PlaybackListener, PlaybackEvent)] in
            var events: [(PlaybackListener, PlaybackEvent)] = []
            state.timeline.heard(upTo: playedDevice)
            let allHeard = state.timeline.allRenderedHeard && state.queue.isEmpty
            // A mark may sit a few frames past what the resampler has released; once everything is
            // heard nothing before it is left to play.
            while let mark = state.timeline.marks.first, mark.position <= state.timeline.playedTotal || allHeard {
                _ = state.timeline.marks.popFirst()
                for listener in state.listeners where listener.id == mark.listener {
                    events.append((listener, .mark(name: mark.name)))
                }
            }
            if allHeard && state.timeline.drainPending {
                state.timeline.drainPending = false
                for listener in state.listeners { events.append((listener, .drained)) }
            }
            let framesToNanoseconds = { (frames: UInt64) -> UInt64 in frames * 1_000_000_000 / UInt64(max(rate, 1)) }
            while let probe = state.timeline.probes.first, let deviceFrame = probe.deviceFrame, deviceFrame <= playedDevice {
                _ = state.timeline.probes.popFirst()
                if now == 0 { now = MonotonicClock.nowNanoseconds() }
                let heardAt = now &- framesToNanoseconds(playedDevice - deviceFrame)
                metrics.recordLatency(nanoseconds: Int64(bitPattern: heardAt &- probe.startNanoseconds))
            }
            if let clearProbe = state.timeline.clearProbe, clearProbe.deviceEnd <= playedDevice {
                state.timeline.clearProbe = nil
                if now == 0 { now = MonotonicClock.nowNanoseconds() }
                let silentAt = now &- framesToNanoseconds(playedDevice - clearProbe.deviceEnd)
                let elapsed = silentAt > clearProbe.startNanoseconds ? silentAt - clearProbe.startNanoseconds : 0
                metrics.recordClearToSilence(nanoseconds: Int64(elapsed))
            }
            return events
        }
        for (listener, event) in events { listener.send(event) }
    }
}
