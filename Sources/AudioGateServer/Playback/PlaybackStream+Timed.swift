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
            state.updateTimed { timed, timeline in
                if !timed.matches(mix) {
                    // The card reopened in another format: what was converted for the old one is gone.
                    timeline.skip(UInt64(timed.frames))
                    let rebuilt = TimedPlayout(
                        format: mix, limitSeconds: timed.limitFrames / max(timed.rate, 1), generation: timed.generation + 1)
                    rebuilt.statistics = timed.statistics
                    timed = rebuilt
                }
                let restart = chunk.generation != timed.generation
                var admission = TimedAdmission(outcome: .queued, generation: timed.generation, restart: restart, wasEmpty: false)
                if chunk.end < now {
                    timed.statistics.lateChunks += 1
                    timed.statistics.lateFrames += chunk.frames
                    admission.outcome = .late
                    return admission
                }
                guard timed.hasRoom else {
                    admission.outcome = .full
                    return admission
                }
                let position = Double(restart ? 0 : chunk.inputFrames) * Double(mix.rate) / Double(max(chunk.rate, 1))
                admission.wasEmpty = timed.isEmpty
                timed.addRecord(position: position, time: Double(chunk.start))
                return admission
            }
        }
    }

    /// Producer side: writes converted frames of an admitted chunk, unless the playout started
    /// over since (`generation` is gone).
    func appendTimed(_ samples: UnsafeBufferPointer<Float>, generation: Int, now: UInt64) {
        // The producer's converter owns the samples for the duration of the copy.
        let handoff = LentBuffer(samples)
        state.withLock { state in
            state.updateTimed { timed, timeline in
                guard timed.generation == generation else { return }
                _ = timeline.queued(timed.write(handoff.readOnly), at: now)
            }
        }
    }

    /// Moves the times of what is queued by `nanoseconds` (a network player's estimate of the
    /// server's clock moved); chunks queued from now on are dated on the new estimate by their producer.
    func retimeTimed(by nanoseconds: Double) {
        state.withLock { state in
            state.updateTimed { timed, _ in timed.retime(by: nanoseconds) }
        }
    }

    /// The stream's own gain and mute (a network player's volume), ramped over the next period.
    public func setVolume(_ gain: Float, muted: Bool) {
        let target = muted || !gain.isFinite ? 0 : min(max(gain, 0), 4)
        state.withLock { $0.targetGain = target }
    }
}
