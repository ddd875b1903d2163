import AudioGateCore
import AudioGateDevices
import Foundation

extension PlaybackStream {
    /// Queues client PCM (whole frames of `format`), waiting for room while the queue is above its
    /// limit so a fast client is slowed by TCP flow control instead of filling memory.
    ///
    /// Returns the client frames queued. Throws `CancellationError` when the caller goes away.
    func enqueue(_ bytes: [UInt8], format: AudioFormat, mixFormat: @Sendable () -> AudioFormat) async throws -> Int {
        let bytesPerFrame = format.bytesPerFrame
        let usable = bytes.count - bytes.count % bytesPerFrame
        guard usable > 0 else { return 0 }
        let sliceBytes = Self.sliceFrames(format) * bytesPerFrame
        var offset = 0
        while offset < usable {
            try await waitForRoom()
            let end = min(usable, offset + sliceBytes)
            _ = bytes.withUnsafeBytes { raw in
                enqueueNow(UnsafeRawBufferPointer(rebasing: raw[offset..<end]), format: format, mixFormat: mixFormat)
            }
            offset = end
        }
        return usable / bytesPerFrame
    }

    /// Queues at most one slice of whole frames at once; the caller saw `hasRoom`, so it fits.
    ///
    /// With `unlessClearedSince`, queues nothing (and returns false) when the stream was cleared
    /// since `clearCount` had that value; the check and the copy are one step under the input lock,
    /// so a clear never lets a producer's next slice through.
    @discardableResult
    func enqueueNow(
        _ raw: UnsafeRawBufferPointer, format: AudioFormat, mixFormat: @Sendable () -> AudioFormat,
        unlessClearedSince clears: Int? = nil
    ) -> Bool {
        guard !raw.isEmpty else { return true }
        guard push(raw, format: format, mix: mixFormat(), unlessClearedSince: clears) else { return false }
        metrics.bytesIn.increment(by: Int64(raw.count))
        return true
    }

    /// Client frames one `enqueueNow` may take: the ring has room for the limit plus one of these.
    static func sliceFrames(_ format: AudioFormat) -> Int {
        max(1, Int(Double(format.rate) * sliceSeconds))
    }

    /// Whether the queue is below its limit.
    var hasRoom: Bool {
        let (frames, rate) = queued
        return frames < limitSeconds * rate
    }

    /// How many times the stream was cleared.
    var clearCount: Int { queue.withLock { $0.clears } }

    /// Suspends while the queue holds more than the limit.
    func waitForRoom() async throws {
        while !hasRoom {
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The stream position just after everything handed to `enqueue` so far (resampler latency included).
    var position: UInt64 {
        input.withLock { state in
            let ratio = state.clientRate > 0 ? Double(state.mixRate) / Double(state.clientRate) : 1
            return state.segmentBase + UInt64((Double(state.segmentInputFrames) * ratio).rounded())
        }
    }

    /// Converts and queues one slice. Runs under the input lock; takes the queue lock only to copy.
    @discardableResult
    func push(_ raw: UnsafeRawBufferPointer, format: AudioFormat, mix: AudioFormat, unlessClearedSince clears: Int? = nil) -> Bool {
        input.withLock { state in
            if let clears, queue.withLock({ $0.clears }) != clears { return false }
            prepare(&state, client: format, mix: mix)
            let frames = raw.count / format.bytesPerFrame
            let sampleCount = frames * format.channels
            if state.decoded.count < sampleCount { state.decoded = [Float](repeating: 0, count: sampleCount) }
            state.decoded.withUnsafeMutableBufferPointer { decoded in
                _ = SampleConversion.decode(raw, format: format.sampleFormat, into: decoded)
            }
            state.segmentInputFrames += UInt64(frames)
            convertAndQueue(&state, frames: frames, endOfInput: false)
            return true
        }
    }

    /// Resamples `frames` decoded client frames, remixes them and appends them to the ring.
    private func convertAndQueue(_ state: inout InputState, frames: Int, endOfInput: Bool) {
        guard let resampler = state.resampler else { return }
        let clientChannels = state.clientChannels
        let outputCapacity = resampler.maximumOutputFrames(forInputFrames: frames)
        if state.resampled.count < outputCapacity * clientChannels {
            state.resampled = [Float](repeating: 0, count: outputCapacity * clientChannels)
        }
        let produced = state.decoded.withUnsafeBufferPointer { decoded in
            state.resampled.withUnsafeMutableBufferPointer { resampled in
                resampler.process(
                    UnsafeBufferPointer(rebasing: decoded[0..<(frames * clientChannels)]),
                    into: UnsafeMutableBufferPointer(rebasing: resampled[0..<(outputCapacity * clientChannels)]),
                    endOfInput: endOfInput)
            }
        }
        guard produced > 0 else { return }
        let mixChannels = state.mixChannels
        if state.remixed.count < produced * mixChannels {
            state.remixed = [Float](repeating: 0, count: produced * mixChannels)
        }
        let remixedFrames = state.resampled.withUnsafeBufferPointer { resampled in
            state.remixed.withUnsafeMutableBufferPointer { remixed in
                ChannelMixer.remix(
                    UnsafeBufferPointer(rebasing: resampled[0..<(produced * clientChannels)]), from: clientChannels,
                    to: mixChannels, into: remixed)
            }
        }
        let now = MonotonicClock.nowNanoseconds()
        var underrun = false
        state.remixed.withUnsafeBufferPointer { remixed in
            // Owned by the input lock holder for the duration of the copy into the ring.
            let handoff = LentBuffer(UnsafeBufferPointer(rebasing: remixed[0..<(remixedFrames * mixChannels)]))
            queue.withLock { queue in
                let written = queue.ring.write(handoff.readOnly)
                queue.queuedTotal += UInt64(written / mixChannels)
                queue.drainPending = true
                if !queue.active && queue.startPendingSince == nil { queue.startPendingSince = now }
                if let dry = queue.dry {
                    if queue.boundary < dry.position, now &- dry.nanoseconds < Self.underrunWindowNanoseconds {
                        queue.underruns += 1
                        underrun = true
                    }
                    queue.dry = nil
                }
            }
        }
        if underrun { metrics.underruns.increment() }
    }

    /// Builds or rebuilds the resampler and the ring when the client or the mix format changed.
    private func prepare(_ state: inout InputState, client: AudioFormat, mix: AudioFormat) {
        let mixChanged = state.mixRate != mix.rate || state.mixChannels != mix.channels
        let clientChanged = state.clientRate != client.rate || state.clientChannels != client.channels
        guard mixChanged || clientChanged || state.resampler == nil else { return }
        if !mixChanged, state.resampler != nil {
            // Same output: let the old converter finish its tail so the switch is seamless.
            convertAndQueue(&state, frames: 0, endOfInput: true)
        }
        if mixChanged {
            let limitSeconds = self.limitSeconds
            queue.withLock { queue in
                if queue.rate != mix.rate || queue.channels != mix.channels {
                    queue.flushedByReformat += UInt64(queue.ring.count / max(queue.channels, 1))
                    let skipped = UInt64(queue.ring.count / max(queue.channels, 1))
                    queue.renderedTotal += skipped
                    queue.ring = Self.makeRing(mix, limitSeconds: limitSeconds)
                    queue.rate = mix.rate
                    queue.channels = mix.channels
                }
            }
        }
        state.resampler = try? Resampler(
            inputRate: client.rate, outputRate: mix.rate, channels: client.channels, quality: quality)
        state.clientRate = client.rate
        state.clientChannels = client.channels
        state.mixRate = mix.rate
        state.mixChannels = mix.channels
        state.segmentBase = queue.withLock { $0.queuedTotal }
        state.segmentInputFrames = 0
    }

    /// The end of an upload: flushes the resampler's tail and marks a boundary (running dry after
    /// it is not an underrun).
    func finishInput() {
        input.withLock { state in
            if state.resampler != nil {
                convertAndQueue(&state, frames: 0, endOfInput: true)
                state.resampler?.reset()
                state.segmentBase = queue.withLock { $0.queuedTotal }
                state.segmentInputFrames = 0
            }
            queue.withLock { queue in
                queue.boundary = queue.queuedTotal
                queue.startNow = !queue.ring.isEmpty
            }
        }
    }

    /// Asks for `listener` to be told when everything queued so far has been heard.
    func addMark(_ name: String, listener: PlaybackListener) {
        let position = self.position
        queue.withLock { queue in
            queue.marks.append(PendingMark(position: position, name: name, listener: listener.id))
            queue.boundary = min(position, queue.queuedTotal)
            queue.startNow = !queue.ring.isEmpty
        }
    }

    /// Measures the time from `startNanoseconds` until the frame at `position` is heard.
    func addLatencyProbe(position: UInt64, startNanoseconds: UInt64) {
        queue.withLock { $0.probes.append(LatencyProbe(position: position, startNanoseconds: startNanoseconds)) }
    }

    /// Flushes the stream (barge-in): queued audio is dropped, what the card already has is heard.
    ///
    /// Returns (played ms since the previous clear, flushed ms); every listener gets `cleared`.
    @discardableResult
    func clear() -> (playedMilliseconds: Int, flushedMilliseconds: Int) {
        let now = MonotonicClock.nowNanoseconds()
        let (event, listeners, result): (PlaybackEvent, [PlaybackListener], (Int, Int)) = input.withLock { state in
            state.resampler?.reset()
            let result = queue.withLock { queue in
                let channels = max(queue.channels, 1)
                let flushed = UInt64(queue.ring.count / channels)
                queue.ring.removeAll()
                let played = queue.renderedTotal - queue.clearBase
                queue.renderedTotal += flushed
                queue.clearBase = queue.renderedTotal
                queue.clears += 1
                queue.marks.removeAll()
                queue.probes.removeAll()
                queue.dry = nil
                queue.active = false
                queue.startPendingSince = nil
                queue.startNow = false
                if queue.recordCount > 0 {
                    let last = queue.records[(queue.recordHead + queue.recordCount - 1) % queue.records.count]
                    queue.clearProbe = (last.deviceStart + last.count, now)
                }
                let rate = Double(max(queue.rate, 1))
                let ms = { (frames: UInt64) in Int((Double(frames) * 1000 / rate).rounded()) }
                return (
                    PlaybackEvent.cleared(
                        playedMilliseconds: ms(played), flushedMilliseconds: ms(flushed), renderedFrame: queue.clearBase),
                    queue.listeners, (ms(played), ms(flushed))
                )
            }
            state.segmentBase = queue.withLock { $0.queuedTotal }
            state.segmentInputFrames = 0
            return result
        }
        for listener in listeners { listener.send(event) }
        return result
    }
}
