/// The shape of an interleaved PCM stream: frames per second, samples per frame and sample encoding.
public struct AudioFormat: Sendable, Hashable, Codable {
    /// Frames per second.
    public var rate: Int
    /// Interleaved channels per frame.
    public var channels: Int
    /// Encoding of each sample.
    public var sampleFormat: SampleFormat

    /// Creates a format; values are not validated here (the API layer bounds them).
    public init(rate: Int, channels: Int, sampleFormat: SampleFormat) {
        self.rate = rate
        self.channels = channels
        self.sampleFormat = sampleFormat
    }

    // snake_case like every other JSON key of the API.
    enum CodingKeys: String, CodingKey {
        case rate, channels
        case sampleFormat = "sample_format"
    }

    /// Bytes per interleaved frame.
    public var bytesPerFrame: Int { channels * sampleFormat.bytesPerSample }

    /// Whole frames in `milliseconds` of audio (rounded to nearest).
    public func frames(forMilliseconds milliseconds: Double) -> Int {
        guard milliseconds.isFinite, milliseconds > 0, rate > 0 else { return 0 }
        let frames = (milliseconds * Double(rate) / 1000).rounded()
        // Huge durations must not trap on conversion.
        return frames >= Double(Int.max / 2) ? Int.max / 2 : Int(frames)
    }

    /// Duration of `frames` frames in milliseconds.
    public func milliseconds(forFrames frames: Int) -> Double {
        guard rate > 0 else { return 0 }
        return Double(frames) * 1000 / Double(rate)
    }

    /// Bytes occupied by `frames` frames.
    public func bytes(forFrames frames: Int) -> Int { frames * bytesPerFrame }

    /// Whole frames contained in `bytes` bytes (a partial trailing frame is not counted).
    public func frames(forBytes bytes: Int) -> Int {
        let perFrame = bytesPerFrame
        return perFrame > 0 ? bytes / perFrame : 0
    }
}
