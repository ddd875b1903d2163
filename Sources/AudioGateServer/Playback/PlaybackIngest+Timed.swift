import AudioGateCore
import AudioGateDevices

extension PlaybackIngest {
    /// An ingest for a timed stream fed interleaved s16 chunks in `format`; throws when the
    /// format is outside what a timed stream takes.
    static func timed(
        stream: PlaybackStream, format: AudioFormat, mixFormat: @escaping @Sendable () -> AudioFormat
    ) throws(PlaybackError) -> PlaybackIngest {
        guard stream.policy == .timed, accepts(format) else {
            throw PlaybackError(.badParameter, "a timed stream takes 1-8 channels at 8000-192000 Hz, not \(format)")
        }
        var client = format
        client.sampleFormat = .s16le
        return PlaybackIngest(stream: stream, format: client, mixFormat: mixFormat, countsBytes: false)
    }

    /// Whether a timed stream takes client audio in `format`.
    static func accepts(_ format: AudioFormat) -> Bool {
        PlaybackParameters.rates.contains(format.rate) && (1...8).contains(format.channels)
    }

    /// Takes a timed chunk (whole frames of this ingest's format) whose first frame must leave
    /// the loudspeaker at `presentedAt` (CLOCK_MONOTONIC nanoseconds), without waiting: all of it,
    /// or nothing when the stream is at its high watermark (wait for room, then offer it again).
    /// A chunk already over is taken and dropped, counted in the stream's `timing` as late.
    func offer(_ raw: UnsafeRawBufferPointer, presentedAt start: UInt64) -> Offer {
        let format = format
        let frames = raw.count / format.bytesPerFrame
        guard frames > 0, format.rate > 0 else { return .consumed(raw.count) }
        let mix = mixFormat()
        let stream = stream
        let now = MonotonicClock.nowNanoseconds()
        // Saturating: a time near the end of UInt64 is far future, not a trap.
        let (sum, overflow) = start.addingReportingOverflow(UInt64(frames) * 1_000_000_000 / UInt64(format.rate))
        // The caller's bytes, read only inside the lock on the caller's thread.
        let handoff = LentBuffer(raw.assumingMemoryBound(to: UInt8.self))
        let (offer, wake) = state.withLock { state -> (Offer, Bool) in
            let chunk = PlaybackStream.TimedChunk(
                start: start, end: overflow ? .max : sum, frames: frames, rate: format.rate, inputFrames: state.timedFrames,
                generation: state.generation)
            let admission = stream.admit(chunk, mix: mix, now: now)
            if admission.restart {
                state.generation = admission.generation
                state.converter.reset()
                state.timedFrames = 0
            }
            switch admission.outcome {
            case .full: return (.consumed(0), false)
            case .late: return (.consumed(raw.count), false)
            case .queued: break
            }
            state.timedFrames += UInt64(frames)
            state.frames += frames
            let whole = UnsafeRawBufferPointer(handoff.readOnly).prefix(frames * format.bytesPerFrame)
            state.converter.convert(UnsafeRawBufferPointer(rebasing: whole), format: format, mix: mix) { samples in
                stream.appendTimed(samples, generation: admission.generation, now: now)
            }
            return (.consumed(raw.count), admission.wasEmpty)
        }
        if wake { stream.demand?.wake() }
        return offer
    }

    /// Queues a timed chunk of interleaved s16 `samples`, suspending while the stream is at its
    /// high watermark until the device takes it to the low one; throws `CancellationError` when
    /// the task is cancelled.
    func write(_ samples: [Int16], presentedAt start: UInt64) async throws {
        guard !samples.isEmpty else { return }
        while samples.withUnsafeBytes({ offer($0, presentedAt: start) }) == .consumed(0) {
            try await stream.waitForRoom()
        }
    }
}
