import AudioGateCore
import AudioGateDevices

extension PlaybackStream {
    /// A timed chunk a producer asks to queue: `frames` client frames at `rate`, the first leaving
    /// the loudspeaker at `start` and the last ending at `end` (monotonic nanoseconds).
    struct TimedChunk {
        var start: UInt64
        var end: UInt64
        var frames: Int
        var rate: Int
        /// Client frames the producer queued before this one since its playout's generation began.
        var inputFrames: UInt64
        /// The playout generation the producer converted for (-1: none yet).
        var generation: Int
    }

    /// What the stream decided about a timed chunk.
    struct TimedAdmission {
        enum Outcome: Equatable {
            /// Dated and to be converted and written under `generation`.
            case queued
            /// Already over when it arrived: counted and dropped, as documented for late chunks.
            case late
            /// The queue is at its high watermark: the producer waits for room.
            case full
        }

        var outcome: Outcome
        /// The generation the producer's audio belongs to now.
        var generation: Int
        /// The playout started over (a clear, another mix format): the producer's converter and
        /// frame count start afresh.
        var restart: Bool
        /// Nothing was queued before: the device may be parked.
        var wasEmpty: Bool
    }

    /// Producer side: dates `chunk` in the playout, or says why not.
    func admit(_ chunk: TimedChunk, mix: AudioFormat, now: UInt64) -> TimedAdmission {
        state.withLock { state in
            guard state.timed != nil else { return TimedAdmission(outcome: .full, generation: 0, restart: false, wasEmpty: false) }
            if !state.timed!.matches(mix) {
                // The card reopened in another format: what was converted for the old one is gone.
                let old = state.timed!
                state.timeline.skip(UInt64(old.frames))
                var rebuilt = TimedPlayout(format: mix, limitSeconds: old.limitFrames / max(old.rate, 1), generation: old.generation + 1)
                rebuilt.statistics = old.statistics
                state.timed = rebuilt
            }
            let generation = state.timed!.generation
            let restart = chunk.generation != generation
            var admission = TimedAdmission(outcome: .queued, generation: generation, restart: restart, wasEmpty: false)
            if chunk.end < now {
                state.timed!.statistics.lateChunks += 1
                state.timed!.statistics.lateFrames += chunk.frames
                admission.outcome = .late
                return admission
            }
            guard state.timed!.hasRoom else {
                admission.outcome = .full
                return admission
            }
            let position = Double(restart ? 0 : chunk.inputFrames) * Double(mix.rate) / Double(max(chunk.rate, 1))
            admission.wasEmpty = state.timed!.isEmpty
            state.timed!.addRecord(position: position, time: Double(chunk.start))
            return admission
        }
    }

    /// Producer side: writes converted frames of an admitted chunk, unless the playout started
    /// over since (`generation` is gone).
    func appendTimed(_ samples: UnsafeBufferPointer<Float>, generation: Int, now: UInt64) {
        // The producer's converter owns the samples for the duration of the copy.
        let handoff = LentBuffer(samples)
        state.withLock { state in
            guard state.timed?.generation == generation else { return }
            let written = state.timed!.write(handoff.readOnly)
            _ = state.timeline.queued(written, at: now)
        }
    }

    /// The stream's own gain and mute (a network player's volume), ramped over the next period.
    public func setVolume(_ gain: Float, muted: Bool) {
        let target = muted || !gain.isFinite ? 0 : min(max(gain, 0), 4)
        state.withLock { $0.targetGain = target }
    }
}
