import AudioGateCore
import AudioGateDevices

extension PlaybackStream {
    /// Where a render leaves a stream's frames.
    enum RenderTarget {
        /// Written into the buffer, for the caller to look at before it mixes them.
        case buffer(UnsafeMutableBufferPointer<Float>)
        /// Added into the mix; `scratch` holds them first when they need more than adding (a
        /// stream's own gain, a timed playout's silence and fades).
        case mix(UnsafeMutableBufferPointer<Float>, scratch: UnsafeMutableBufferPointer<Float>)
    }

    /// Playback thread: renders up to `frames` frames into `destination` (interleaved, `format`
    /// channels) for `period`; returns the frames filled.
    func render(into destination: UnsafeMutableBufferPointer<Float>, frames: Int, format: AudioFormat, at period: PlaybackPeriod) -> Int {
        render(.buffer(destination), frames: frames, format: format, at: period)
    }

    /// Playback thread: renders up to `frames` frames (interleaved, `format` channels) for
    /// `period` to `target`; returns the frames filled. A queued stream gives what it has queued;
    /// a timed one fills the whole period (silence before a chunk's time included) or nothing.
    /// The stream's gain ramps over the frames filled. A queued stream at unit gain adds its
    /// queue straight into a mix, with no copy in between.
    ///
    /// Allocation-free unless producers wait for room: then they are woken, outside the lock.
    func render(_ target: RenderTarget, frames: Int, format: AudioFormat, at period: PlaybackPeriod) -> Int {
        // The caller's buffers belong to its thread for the whole call; the lock only lends them.
        let (handoff, mix): (LentBuffer<Float>, LentBuffer<Float>?) = switch target {
        case .buffer(let buffer): (LentBuffer(buffer), nil)
        case .mix(let output, let scratch): (LentBuffer(scratch), LentBuffer(output))
        }
        let result = state.withLock { state -> RenderResult in
            // Held: the timeline stays as it is, so playing on continues the same run without a gap counted.
            guard !state.paused else { return RenderResult(filled: 0) }
            let unitGain = state.gain == 1 && state.targetGain == 1
            let result: RenderResult
            if !state.fadeTail.isEmpty {
                // A cleared stream's fade comes first, alone in its period; what follows starts after it.
                result = RenderResult(filled: state.fadeTail.render(into: handoff.buffer, frames: frames, channels: format.channels))
            } else {
                result = state.updatePlayout(
                    queued: { queue, timeline in
                        Self.renderQueued(
                            queue, &timeline, into: handoff.buffer, adding: unitGain ? mix?.buffer.baseAddress : nil,
                            frames: frames, format: format, startFrame: period.startFrame)
                    },
                    timed: { timed, timeline in
                        Self.renderTimed(&timed, &timeline, into: handoff.buffer, frames: frames, format: format, period: period)
                    })
            }
            guard result.filled > 0, !result.mixed, let output = handoff.buffer.baseAddress else {
                state.gain = state.targetGain
                return result
            }
            if !unitGain {
                var ramp = GainRamp(from: state.gain, to: state.targetGain, frames: result.filled)
                SampleMath.ramp(output, frames: result.filled, channels: format.channels, &ramp)
                state.gain = state.targetGain
            }
            if let mix = mix?.buffer.baseAddress {
                SampleMath.accumulate(output, into: mix, count: result.filled * format.channels)
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
        /// The frames were added into the mix already.
        var mixed = false
        /// Producers waiting for room, now that the device took the queue to its low watermark.
        var wakes: WaiterList.Wakes = .none
        /// A timed playout ran dry while playing.
        var underran = false
    }

    /// A queued stream's period: into `destination`, or added straight into the mix at `mix`.
    private static func renderQueued(
        _ queue: PlayoutQueue, _ timeline: inout PlaybackTimeline, into destination: UnsafeMutableBufferPointer<Float>,
        adding mix: UnsafeMutablePointer<Float>?, frames: Int, format: AudioFormat, startFrame: UInt64
    ) -> RenderResult {
        if !queue.matches(format) {
            // Audio resampled for another hardware format would play at the wrong pitch; the
            // next write rebuilds the queue for the new format.
            guard !queue.isEmpty else { return RenderResult(filled: 0) }
            let dropped = queue.removeAll()
            timeline.skip(UInt64(dropped.frames))
            return RenderResult(filled: 0, wakes: dropped.wakes)
        }
        if !timeline.active {
            guard !queue.isEmpty else { return RenderResult(filled: 0) }
            let needed = UInt64(format.rate) * PlaybackTimeline.prebufferNanoseconds / 1_000_000_000
            guard timeline.starts(buffered: UInt64(queue.frames), needed: needed) else { return RenderResult(filled: 0) }
        }
        let taken = if let mix { queue.read(adding: mix, frames: frames) } else { queue.read(into: destination, frames: frames) }
        timeline.rendered(taken.frames, of: frames, startFrame: startFrame)
        return RenderResult(filled: taken.frames, mixed: mix != nil, wakes: taken.wakes)
    }

    private static func renderTimed(
        _ timed: inout TimedPlayout, _ timeline: inout PlaybackTimeline, into destination: UnsafeMutableBufferPointer<Float>,
        frames: Int, format: AudioFormat, period: PlaybackPeriod
    ) -> RenderResult {
        guard timed.matches(format) else {
            // Converted for another hardware format: the producer starts over at its next chunk.
            guard !timed.isEmpty else { return RenderResult(filled: 0) }
            let flushed = UInt64(timed.frames)
            let wakes = timed.reset()
            timeline.skip(flushed)
            return RenderResult(filled: 0, wakes: wakes)
        }
        guard let leaveTime = period.leaveTime else { return RenderResult(filled: 0) }
        let rendered = timed.render(into: destination, frames: frames, startTime: leaveTime)
        // Dated like queued audio, so a clear answers what played and the stream idles once heard;
        // a timed period is filled whole or not at all, so the timeline never counts it dry.
        timeline.rendered(rendered.filled, of: rendered.filled, startFrame: period.startFrame)
        return RenderResult(filled: rendered.filled, wakes: rendered.wakes, underran: rendered.underran)
    }

    /// Playback thread: the card has played everything up to device frame `playedDevice`. Sends
    /// the marks and `drained` the timeline finds heard and records its latency spans, all after
    /// the stream's lock is let go.
    func progress(playedDevice: UInt64, rate: Int) {
        let (progress, delivery) = state.withLock { state -> (PlaybackTimeline.Progress, PlaybackOutbox.Batch?) in
            let progress = state.timeline.progress(playedDevice: playedDevice, rate: rate, queueEmpty: state.playout.isEmpty)
            guard !progress.sends.isEmpty else { return (progress, nil) }
            return (progress, state.outbox.post(.init(sends: progress.sends, listeners: state.listeners)))
        }
        // An empty progress allocates nothing: a period without a mark, a drain or a probe costs nothing here.
        guard !progress.isEmpty else { return }
        deliver(delivery)
        let now = MonotonicClock.nowNanoseconds()
        for latency in progress.latencies { metrics.recordLatency(nanoseconds: latency.nanoseconds(at: now)) }
        if let span = progress.clearToSilence { metrics.recordClearToSilence(nanoseconds: max(0, span.nanoseconds(at: now))) }
    }
}
