import AudioGateCore

/// A stream's converted audio waiting for the device, in the mix format, with a high and a low
/// watermark: producers stop above the high one and are woken once the device has taken the queue
/// below the low one, as swift-nio's back-pressure strategies do.
///
/// Owned by one stream and used only under its lock (a class, so the stream's playout enum
/// holds one reference and a transition changes it in place); not thread-safe on its own.
final class PlayoutQueue {
    private(set) var ring: RingBuffer<Float>
    private(set) var rate: Int
    private(set) var channels: Int
    /// Seconds of audio at which producers stop.
    let limitSeconds: Int
    /// Producers waiting for the queue to fall to the low watermark.
    private var waiters = WaiterList()

    init(format: AudioFormat, limitSeconds: Int) {
        self.limitSeconds = max(limitSeconds, 1)
        ring = Self.makeRing(format, limitSeconds: self.limitSeconds)
        rate = format.rate
        channels = format.channels
    }

    /// Room for the limit plus one slice and a resampler tail, so a slice admitted below the high
    /// watermark always fits.
    static func makeRing(_ format: AudioFormat, limitSeconds: Int) -> RingBuffer<Float> {
        // The bound is minutes of audio; storage grows only as far as a client really queues. It
        // starts at a quarter second: a real-time sender keeps tens of milliseconds queued, and a
        // ring it cycles through in a second would push each message's writes out of the cache.
        RingBuffer(
            capacity: (limitSeconds + 1) * format.rate * format.channels + 4096 * format.channels,
            initialCapacity: format.rate / 4 * format.channels)
    }

    /// Frames queued.
    var frames: Int { ring.count / max(channels, 1) }

    var isEmpty: Bool { ring.isEmpty }

    /// Frames at which producers stop.
    var highWatermark: Int { limitSeconds * rate }

    /// Frames at or below which waiting producers are woken.
    var lowWatermark: Int { highWatermark - highWatermark / 4 }

    /// Whether producers wait for room.
    var hasWaiters: Bool { !waiters.isEmpty }

    /// Whether a producer may queue another slice.
    var hasRoom: Bool { frames < highWatermark }

    /// Whether the queue holds audio converted for `format`.
    func matches(_ format: AudioFormat) -> Bool {
        rate == format.rate && channels == format.channels
    }

    /// Appends converted samples; returns the frames written.
    func write(_ samples: UnsafeBufferPointer<Float>) -> Int {
        ring.write(samples) / max(channels, 1)
    }

    /// Device thread: takes up to `frames` frames into `destination`; returns the frames taken and
    /// the producers to wake (the queue fell to its low watermark).
    func read(into destination: UnsafeMutableBufferPointer<Float>, frames: Int) -> (Int, WaiterList.Wakes) {
        let taken = ring.read(into: UnsafeMutableBufferPointer(rebasing: destination[0..<(frames * channels)])) / channels
        guard !waiters.isEmpty, self.frames <= lowWatermark else { return (taken, .none) }
        return (taken, waiters.takeAll())
    }

    /// Drops everything queued (a clear); returns the frames dropped and the producers to wake.
    func removeAll() -> (UInt64, WaiterList.Wakes) {
        let dropped = UInt64(frames)
        ring.removeAll()
        return (dropped, waiters.isEmpty ? .none : waiters.takeAll())
    }

    /// Starts over for another mix format: what was queued would play at the wrong pitch. Returns
    /// the frames dropped and the producers to wake.
    func reformat(_ format: AudioFormat) -> (UInt64, WaiterList.Wakes) {
        let (dropped, wakes) = removeAll()
        ring = Self.makeRing(format, limitSeconds: limitSeconds)
        rate = format.rate
        channels = format.channels
        return (dropped, wakes)
    }

    /// Registers `wake` for when the queue has room again; nil when it has room now.
    func waitForRoom(_ wake: @escaping WaiterList.Wake) -> Int? {
        hasRoom ? nil : waiters.add(wake)
    }

    /// Forgets a waiter whose producer stopped waiting.
    func cancelWait(_ id: Int) {
        waiters.remove(id)
    }
}
