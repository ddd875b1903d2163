import AudioGateCore
import AudioGateDevices

extension PlaybackStream {
    /// Playback thread: renders up to `frames` frames into `destination` (interleaved, `format`
    /// channels) for `period`; returns the frames filled. A queued stream gives what it has
    /// queued; a timed one fills the whole period (silence before a chunk's time included) or
    /// nothing. The stream's gain ramps over the frames filled.
    ///
    /// Allocation-free unless producers wait for room: then they are woken, outside the lock.
    func render(into destination: UnsafeMutableBufferPointer<Float>, frames: Int, format: AudioFormat, at period: PlaybackPeriod) -> Int {
        // The scratch buffer belongs to the calling thread for the whole call; the ring only copies into it.
        let handoff = LentBuffer(destination)
        let timed = policy == .timed
        let result = state.withLock { state -> RenderResult in
            let result = timed
                ? Self.renderTimed(&state, into: handoff.buffer, frames: frames, format: format, period: period)
                : Self.renderQueued(&state, into: handoff.buffer, frames: frames, format: format, startFrame: period.startFrame)
            guard result.filled > 0, let output = handoff.buffer.baseAddress else {
                state.gain = state.targetGain
                return result
            }
            if state.gain != state.targetGain || state.gain != 1 {
                var ramp = GainRamp(from: state.gain, to: state.targetGain, frames: result.filled)
                SampleMath.ramp(output, frames: result.filled, channels: format.channels, &ramp)
                state.gain = state.targetGain
            }
            return result
        }
        result.wakes.run()
        if result.underran { metrics.underruns.increment() }
        return result.filled
    }

    /// What one render did, acted on once the stream's lock is let go.
    struct RenderResult {
        var filled: Int
        /// Producers waiting for room, now that the device took the queue to its low watermark.
        var wakes: WaiterList.Wakes = .none
        /// A timed playout ran dry while playing.
        var underran = false
    }

    private static func renderQueued(
        _ state: inout State, into destination: UnsafeMutableBufferPointer<Float>, frames: Int, format: AudioFormat,
        startFrame: UInt64
    ) -> RenderResult {
        // Held: the timeline stays as it is, so playing on continues the same run without a gap counted.
        guard !state.paused else { return RenderResult(filled: 0) }
        if !state.queue.matches(format) {
            // Audio resampled for another hardware format would play at the wrong pitch; the
            // next write rebuilds the queue for the new format.
            guard !state.queue.isEmpty else { return RenderResult(filled: 0) }
            let (dropped, wakes) = state.queue.removeAll()
            state.timeline.skip(dropped)
            return RenderResult(filled: 0, wakes: wakes)
        }
        if !state.timeline.active {
            guard !state.queue.isEmpty else { return RenderResult(filled: 0) }
            let needed = UInt64(format.rate) * PlaybackTimeline.prebufferNanoseconds / 1_000_000_000
            guard state.timeline.starts(buffered: UInt64(state.queue.frames), needed: needed) else { return RenderResult(filled: 0) }
        }
        let (taken, wakes) = state.queue.read(into: destination, frames: frames)
        state.timeline.rendered(taken, of: frames, startFrame: startFrame)
        return RenderResult(filled: taken, wakes: wakes)
    }

    private static func renderTimed(
        _ state: inout State, into destination: UnsafeMutableBufferPointer<Float>, frames: Int, format: AudioFormat,
        period: PlaybackPeriod
    ) -> RenderResult {
        guard state.timed!.matches(format) else {
            // Converted for another hardware format: the producer starts over at its next chunk.
            guard !state.timed!.isEmpty else { return RenderResult(filled: 0) }
            let flushed = UInt64(state.timed!.frames)
            let wakes = state.timed!.reset()
            state.timeline.skip(flushed)
            return RenderResult(filled: 0, wakes: wakes)
        }
        guard let leaveTime = period.leaveTime else { return RenderResult(filled: 0) }
        let underruns = state.timed!.statistics.underruns
        let filled = state.timed!.render(into: destination, frames: frames, startTime: leaveTime)
        // Dated like queued audio, so a clear answers what played and the stream idles once heard;
        // a timed period is filled whole or not at all, so the timeline never counts it dry.
        state.timeline.rendered(filled, of: filled, startFrame: period.startFrame)
        return RenderResult(
            filled: filled, wakes: state.timed!.takeWakes(), underran: state.timed!.statistics.underruns != underruns)
    }

    /// Playback thread: the card has played everything up to device frame `playedDevice`. Fires
    /// marks and `drained` whose audio has been heard and finishes latency measurements, all after
    /// the stream's lock is let go.
    func progress(playedDevice: UInt64, rate: Int) {
        let (progress, listeners) = state.withLock { state -> (PlaybackTimeline.Progress, [PlaybackListener]) in
            let progress = state.timeline.progress(playedDevice: playedDevice, queueEmpty: state.queue.isEmpty)
            return (progress, progress.isEmpty ? [] : state.listeners)
        }
        // An empty progress allocates nothing: a period without a mark, a drain or a probe costs nothing here.
        guard !progress.isEmpty else { return }
        for mark in progress.dueMarks {
            for listener in listeners where listener.id == mark.listener { listener.send(.mark(name: mark.name)) }
        }
        if progress.drained {
            for listener in listeners { listener.send(.drained) }
        }
        let now = MonotonicClock.nowNanoseconds()
        let framesToNanoseconds = { (frames: UInt64) -> UInt64 in frames * 1_000_000_000 / UInt64(max(rate, 1)) }
        for probe in progress.heardProbes {
            let heardAt = now &- framesToNanoseconds(playedDevice - (probe.deviceFrame ?? playedDevice))
            metrics.recordLatency(nanoseconds: Int64(bitPattern: heardAt &- probe.startNanoseconds))
        }
        if let clearProbe = progress.silentAfterClear {
            let silentAt = now &- framesToNanoseconds(playedDevice - clearProbe.deviceEnd)
            let elapsed = silentAt > clearProbe.startNanoseconds ? silentAt - clearProbe.startNanoseconds : 0
            metrics.recordClearToSilence(nanoseconds: Int64(elapsed))
        }
    }
}
