import AudioGateCore
import AudioGateDevices
import NIOCore
import Synchronization

/// The one way audio enters a playback stream. Every producer (a WebSocket, a POST body, a decoder
/// thread, `/v1/say`, a Wyoming snd connection, the Snapcast client) owns one: it carries partial
/// frames, converts to the mix format, queues below the stream's high watermark and waits for
/// room the way the producer waits (a task, a thread, or an event loop that stops reading).
/// Queued audio goes in a slice at a time (`offer(_:format:slices:)`); a timed stream's chunks go
/// in whole, each with its presentation time (`offer(_:presentedAt:)`).
final class PlaybackIngest: Sendable {
    /// The stream fed.
    let stream: PlaybackStream
    /// The producer's audio format, unless a write names another.
    let format: AudioFormat
    /// Whether a clear of the stream ends this producer's audio (speech, a compressed file) rather
    /// than only what is queued (a live sender goes on after a barge-in).
    let endsAtClear: Bool
    let mixFormat: @Sendable () -> AudioFormat
    private let countsBytes: Bool
    let state: Mutex<State>

    struct State {
        var converter: PlaybackConverter
        /// The stream's clear count this producer has seen.
        var clears: Int
        /// Whole client frames accepted.
        var frames = 0
        /// Timed: client frames queued since the playout's generation began, which date the next chunk.
        var timedFrames: UInt64 = 0
        /// Timed: the playout generation the converter's audio belongs to (-1: none yet).
        var generation = -1
    }

    /// What an `offer` did.
    enum Offer: Equatable {
        /// Took this many bytes; fewer than offered: the stream is full, wait for room.
        case consumed(Int)
        /// The stream was cleared and this producer ends at a clear: nothing was taken.
        case cleared
    }

    /// Slices of client audio converted in one go: half a second keeps each lock hold short.
    static let sliceSeconds = 0.5

    init(
        stream: PlaybackStream, format: AudioFormat, mixFormat: @escaping @Sendable () -> AudioFormat,
        endsAtClear: Bool = false, countsBytes: Bool = true
    ) {
        self.stream = stream
        self.format = format
        self.mixFormat = mixFormat
        self.endsAtClear = endsAtClear
        self.countsBytes = countsBytes
        state = Mutex(State(converter: PlaybackConverter(quality: stream.quality), clears: stream.clearCount))
    }

    /// An ingest fed by a decoder, which names the format of each frame it hands over; bytes are
    /// not counted here, since decoded PCM is not what the client sent.
    static func decoded(
        stream: PlaybackStream, mixFormat: @escaping @Sendable () -> AudioFormat, endsAtClear: Bool = false
    ) -> PlaybackIngest {
        PlaybackIngest(
            stream: stream, format: AudioFormat(rate: 48000, channels: 1, sampleFormat: .f32le), mixFormat: mixFormat,
            endsAtClear: endsAtClear, countsBytes: false)
    }

    /// Client bytes one slice holds.
    static func sliceBytes(_ format: AudioFormat) -> Int {
        max(1, Int(Double(format.rate) * sliceSeconds)) * format.bytesPerFrame
    }

    /// Whole client frames taken so far.
    var frames: Int { state.withLock { $0.frames } }

    /// The stream position just after everything taken so far (what the resampler holds included).
    var position: UInt64 {
        state.withLock { stream.position(pending: $0.converter.pendingFrames) }
    }

    /// Takes as much of `raw` as the stream has room for, at most `slices` slices, without waiting.
    func offer(_ raw: UnsafeRawBufferPointer, format: AudioFormat? = nil, slices: Int = .max) -> Offer {
        let format = format ?? self.format
        let mix = mixFormat()
        let stream = stream
        let endsAtClear = endsAtClear
        // The caller's bytes, read only inside the lock on the caller's thread.
        let handoff = LentBuffer(raw.assumingMemoryBound(to: UInt8.self))
        let offer = state.withLock { state -> Offer in
            let raw = UnsafeRawBufferPointer(handoff.readOnly)
            let admission = stream.admission()
            let clears = admission.clears
            if clears != state.clears {
                if endsAtClear { return .cleared }
                state.clears = clears
                state.converter.resetResampler()
            }
            guard admission.hasRoom else { return .consumed(0) }
            let guardClears = endsAtClear ? clears : nil
            let slice = Self.sliceBytes(format)
            var offset = 0
            var room = true
            var cleared = false
            var left = slices
            while offset < raw.count, room, !cleared, left > 0 {
                left -= 1
                let end = min(raw.count, offset + slice)
                let carried = state.converter.carriedBytes
                state.converter.convert(UnsafeRawBufferPointer(rebasing: raw[offset..<end]), format: format, mix: mix) {
                    samples in
                    guard !cleared else { return }
                    if let left = stream.append(samples, mix: mix, unlessClearedSince: guardClears) {
                        room = left
                    } else {
                        cleared = true
                    }
                }
                state.frames += (carried + end - offset) / format.bytesPerFrame
                offset = end
            }
            return cleared ? .cleared : .consumed(offset)
        }
        if countsBytes, case .consumed(let count) = offer, count > 0 { stream.metrics.bytesIn.increment(by: Int64(count)) }
        return offer
    }

    /// Queues all of `bytes`, suspending while the stream is full. Returns false when a clear ended
    /// this producer (`endsAtClear`); throws `CancellationError` when the task is cancelled.
    ///
    /// A slice at a time, yielding between slices: tasks run on the event loops, and converting a
    /// long text's minute of audio in one go would hold a loop (and its sockets) for a fifth of a second.
    func write(_ bytes: [UInt8], format: AudioFormat? = nil) async throws -> Bool {
        var offset = 0
        while true {
            let offer = bytes.withUnsafeBytes {
                self.offer(UnsafeRawBufferPointer(rebasing: $0[offset...]), format: format, slices: 1)
            }
            guard case .consumed(let count) = offer else { return false }
            offset += count
            if offset >= bytes.count { return true }
            try await next(after: count)
        }
    }

    /// Queues all of `buffer`'s readable bytes, as `write(_:format:)` does.
    func write(_ buffer: ByteBuffer, format: AudioFormat? = nil) async throws -> Bool {
        var buffer = buffer
        while true {
            let offer = buffer.withUnsafeReadableBytes { self.offer($0, format: format, slices: 1) }
            guard case .consumed(let count) = offer else { return false }
            buffer.moveReaderIndex(forwardBy: count)
            if buffer.readableBytes == 0 { return true }
            try await next(after: count)
        }
    }

    /// Between two slices of one write: waits for room when the last offer took nothing, and
    /// otherwise lets the loop's other work run first.
    private func next(after taken: Int) async throws {
        if taken == 0 {
            try await stream.waitForRoom()
        } else {
            await Task.yield()
            try Task.checkCancellation()
        }
    }

    /// Queues decoded float samples from a producer thread, blocking it while the stream is full
    /// (`wakeup` is signalled by the device thread, or by whoever cancels). Returns false when a
    /// clear ended this producer.
    func writeBlocking(
        _ samples: UnsafeBufferPointer<Float>, rate: Int, channels: Int, wakeup: ThreadWakeup, isCancelled: () -> Bool
    ) throws(CancellationError) -> Bool {
        let format = AudioFormat(rate: rate, channels: channels, sampleFormat: .f32le)
        let raw = UnsafeRawBufferPointer(samples)
        var offset = 0
        while true {
            guard case .consumed(let count) = offer(UnsafeRawBufferPointer(rebasing: raw[offset...]), format: format) else {
                return false
            }
            offset += count
            if offset >= raw.count { return true }
            try stream.waitForRoom(wakeup: wakeup, isCancelled: isCancelled)
        }
    }

    /// The end of this producer's audio (an upload, a Wyoming `audio-stop`): flushes the
    /// resampler's tail and marks a boundary (running dry after it is not an underrun).
    func finish() {
        let mix = mixFormat()
        let stream = stream
        state.withLock { state in
            state.converter.finish { samples in _ = stream.append(samples, mix: mix, unlessClearedSince: nil) }
        }
        stream.placeBoundary()
    }

    /// Asks for `listener` to be told when everything taken so far has been heard; false when the
    /// stream already holds its most pending marks (nothing is placed).
    func mark(_ name: String, listener: PlaybackListener) -> Bool {
        state.withLock { stream.addMark(name, listener: listener, pending: $0.converter.pendingFrames) }
    }

    /// Measures from `startNanoseconds` until what is taken next is heard.
    func probeLatency(startNanoseconds: UInt64) {
        stream.addLatencyProbe(position: position, startNanoseconds: startNanoseconds)
    }

    /// Drops a partial frame carried over (the producer starts a new format or a new file).
    func dropPartialFrame() {
        state.withLock { $0.converter.dropPartialFrame() }
    }

    /// Forgets what is in flight after this producer's own clear: its partial frame and the
    /// resampler's history.
    func reset() {
        state.withLock { state in
            state.converter.reset()
            state.clears = stream.clearCount
        }
    }
}
