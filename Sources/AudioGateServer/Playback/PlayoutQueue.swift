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

    /// Frames a read took or a flush dropped, and the producers that now have room, to be woken
    /// once the stream's lock is let go.
    struct Freed {
        var frames: Int
        var wakes: WaiterList.Wakes
    }

    /// Device thread: takes up to `frames` frames into `destination`; wakes producers once the
    /// queue falls to its low watermark.
    func read(into destination: UnsafeMutableBufferPointer<Float>, frames: Int) -> Freed {
        took(ring.read(into: UnsafeMutableBufferPointer(rebasing: destination[0..<(frames * channels)])))
    }

    /// Device thread: adds up to `frames` frames into the mix at `destination` (the stream plays at
    /// unit gain, so nothing is scaled first); wakes producers as `read(into:frames:)` does.
    func read(adding destination: UnsafeMutablePointer<Float>, frames: Int) -> Freed {
        took(ring.read(adding: destination, count: frames * channels))
    }

    /// The device took `samples`: the frames, and the producers to wake once the queue is at its low watermark.
    private func took(_ samples: Int) -> Freed {
        Freed(frames: samples / channels, wakes: frames <= lowWatermark ? waiters.takeAll() : .none)
    }

    /// A copy of the first `frames` frames queued (fewer if fewer are), interleaved.
    func head(frames: Int) -> [Float] {
        var head = [Float](repeating: 0, count: min(frames, self.frames) * channels)
        _ = head.withUnsafeMutableBufferPointer { ring.peek(into: $0) }
        return head
    }

    /// Drops everything queued (a clear).
    func removeAll() -> Freed {
        let dropped = frames
        ring.removeAll()
        return Freed(frames: dropped, wakes: waiters.takeAll())
    }

    /// Starts over for another mix format: what was queued would play at the wrong pitch.
    func reformat(_ format: AudioFormat) -> Freed {
        let freed = removeAll()
        ring = Self.makeRing(format, limitSeconds: limitSeconds)
        rate = format.rate
        channels = format.channels
        return freed
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
