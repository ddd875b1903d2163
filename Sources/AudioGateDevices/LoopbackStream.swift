import AudioGateCore
import Foundation

/// One direction of the built-in loopback card, behaving like a non-blocking ALSA PCM.
final class LoopbackStream: PCMStream {
    let card: LoopbackCard
    let direction: PCMDirection
    let negotiated: NegotiatedFormat
    /// Capture: the next frame to read.
    private var readPosition: Int64 = 0
    /// Frames `wait` waits for (ALSA's `avail_min`): one period until told otherwise.
    private var wakeFrames: Int

    init(card: LoopbackCard, direction: PCMDirection, request: PCMRequest) {
        self.card = card
        self.direction = direction
        let rate = LoopbackCard.format.rate
        let period = max(16, rate * request.periodMilliseconds / 1000)
        negotiated = NegotiatedFormat(
            format: LoopbackCard.format,
            periodFrames: period,
            bufferFrames: max(2 * period, rate * request.bufferMilliseconds / 1000))
        wakeFrames = period
        readPosition = card.nowFrame
        if direction == .playback { card.preparePlayback() }
    }

    func start() throws(ALSAError) {
        readPosition = card.nowFrame
    }

    func wait(timeoutMilliseconds: Int32) throws(ALSAError) -> Bool {
        let target: Int64
        switch direction {
        case .capture:
            target = readPosition + Int64(wakeFrames)
        case .playback:
            // Room for `wakeFrames` appears when the clock consumes what is queued beyond buffer - wakeFrames.
            let queued = Int64(card.playbackDelay())
            let excess = queued - Int64(negotiated.bufferFrames - wakeFrames)
            target = card.nowFrame + max(0, excess)
        }
        let wait = card.nanoseconds(until: target)
        let limit = UInt64(max(0, timeoutMilliseconds)) * 1_000_000
        if wait > 0 { Thread.sleep(forTimeInterval: Double(min(wait, limit)) / 1e9) }
        return wait <= limit
    }

    func read(into buffer: UnsafeMutableRawPointer, frames: Int) throws(ALSAError) -> Int {
        let available = try self.available()
        let count = min(frames, available)
        guard count > 0 else { return 0 }
        card.read(into: buffer.assumingMemoryBound(to: Float.self), from: readPosition, frames: count)
        readPosition += Int64(count)
        return count
    }

    func write(from buffer: UnsafeRawPointer, frames: Int) throws(ALSAError) -> Int {
        try card.write(
            buffer.assumingMemoryBound(to: Float.self), frames: frames, bufferFrames: negotiated.bufferFrames)
    }

    func available() throws(ALSAError) -> Int {
        switch direction {
        case .capture:
            let available = card.nowFrame - readPosition
            if available > Int64(negotiated.bufferFrames) {
                throw ALSAError(code: .xrun, call: "loopback_read", errno: EPIPE, message: "overrun")
            }
            return Int(available)
        case .playback:
            return max(0, negotiated.bufferFrames - card.playbackDelay())
        }
    }

    var datesByPointer: Bool { false }

    func delay() throws(ALSAError) -> Int {
        switch direction {
        case .capture: Int(max(0, card.nowFrame - readPosition))
        case .playback: card.playbackDelay()
        }
    }

    func prepare() throws(ALSAError) {
        switch direction {
        case .capture: readPosition = card.nowFrame
        case .playback: card.preparePlayback()
        }
    }

    func resume() throws(ALSAError) {}

    func setWakeThreshold(frames: Int) throws(ALSAError) {
        wakeFrames = min(max(1, frames), negotiated.bufferFrames)
    }

    func stop() throws(ALSAError) {
        if direction == .playback { card.preparePlayback() }
    }
}
