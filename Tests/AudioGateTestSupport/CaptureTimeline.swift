/// Captured chunks placed on their capture-time grid, so streams of the same microphone (raw and
/// processed) can be compared over the same span of time.
public struct CaptureTimeline: Sendable {
    /// Samples per second.
    public let rate: Int
    /// Capture time (ms) of sample 0.
    public let startMs: Double
    /// Mono samples; spans no chunk covered are zero.
    public private(set) var samples: [Float]

    /// Places `chunks` (capture time of the first sample, mono samples) from `startMs` on.
    public init(rate: Int, startMs: Double, chunks: [(timestampMs: Double, samples: [Float])]) {
        self.rate = rate
        self.startMs = startMs
        let end = chunks.map { $0.timestampMs + Double($0.samples.count) * 1000 / Double(rate) }.max() ?? startMs
        samples = [Float](repeating: 0, count: max(0, Int((end - startMs) * Double(rate) / 1000) + 1))
        for chunk in chunks {
            let first = Int(((chunk.timestampMs - startMs) * Double(rate) / 1000).rounded())
            for (offset, value) in chunk.samples.enumerated() where first + offset >= 0 && first + offset < samples.count {
                samples[first + offset] = value
            }
        }
    }

    /// Places gapless `chunks` back to back from the first one's capture time: sample-exact over long
    /// spans, where each chunk's own timestamp may be a sample or two off the running count.
    public init(rate: Int, startMs: Double, contiguous chunks: [(timestampMs: Double, samples: [Float])]) {
        let first = chunks.first?.timestampMs ?? startMs
        var placed: [(timestampMs: Double, samples: [Float])] = []
        var frames = 0
        for chunk in chunks {
            placed.append((first + Double(frames) * 1000 / Double(rate), chunk.samples))
            frames += chunk.samples.count
        }
        self.init(rate: rate, startMs: startMs, chunks: placed)
    }

    /// The samples captured from `fromMs` to `toMs`.
    public func window(_ fromMs: Double, _ toMs: Double) -> ArraySlice<Float> {
        let lower = max(0, min(samples.count, Int((fromMs - startMs) * Double(rate) / 1000)))
        let upper = max(lower, min(samples.count, Int((toMs - startMs) * Double(rate) / 1000)))
        return samples[lower..<upper]
    }

    /// RMS level in dBFS from `fromMs` to `toMs`.
    public func level(_ fromMs: Double, _ toMs: Double) -> Double { Signal.rmsDBFS(Array(window(fromMs, toMs))) }

    /// Capture time of the first 10 ms frame after `afterMs` louder than `thresholdDBFS`.
    public func onset(after afterMs: Double, thresholdDBFS: Double) -> Double? {
        let frame = rate / 100
        var index = max(0, Int((afterMs - startMs) * Double(rate) / 1000))
        while index + frame <= samples.count {
            if Signal.rmsDBFS(Array(samples[index..<(index + frame)])) > thresholdDBFS {
                return startMs + Double(index) * 1000 / Double(rate)
            }
            index += frame
        }
        return nil
    }
}
