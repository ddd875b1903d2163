import AudioGateCore

/// The first milliseconds of a flushed queue, played once with a fade to silence: a stream cut
/// mid-wave clicks, and the click is heard across the spectrum over whatever else plays.
///
/// Filled by a clear (on a client's event loop, where allocating is fine) and rendered by the
/// device thread, which only copies from it and never frees its storage.
struct FadeTail {
    /// How long the fade is: long enough that the cut has no broadband edge, short enough that a
    /// barge-in is still silent at once.
    static let milliseconds = 5

    private var samples: [Float] = []
    private var channels = 1
    /// Frames of the tail already rendered.
    private var played = 0

    init() {}

    /// The tail of `samples` (interleaved, `channels`), faded from full to silence over its length.
    init(_ samples: [Float], channels: Int) {
        self.samples = samples
        self.channels = max(channels, 1)
    }

    private var frames: Int { samples.count / channels }

    /// Whether nothing is left to play.
    var isEmpty: Bool { played >= frames }

    /// Writes up to `frames` frames of the fade into `destination` (interleaved, `channels`);
    /// returns how many. A tail made for another channel count is dropped: the card reopened.
    mutating func render(into destination: UnsafeMutableBufferPointer<Float>, frames wanted: Int, channels: Int) -> Int {
        guard channels == self.channels, let output = destination.baseAddress else {
            played = frames
            return 0
        }
        let count = min(wanted, frames - played, destination.count / channels)
        guard count > 0 else { return 0 }
        samples.withUnsafeBufferPointer { source in
            output.update(from: source.baseAddress! + played * channels, count: count * channels)
        }
        let total = Float(frames)
        var ramp = GainRamp(from: 1 - Float(played) / total, to: 1 - Float(played + count) / total, frames: count)
        SampleMath.ramp(output, frames: count, channels: channels, &ramp)
        played += count
        return count
    }
}
