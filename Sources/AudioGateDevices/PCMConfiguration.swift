import AudioGateCore

/// Which way audio flows through a PCM.
public enum PCMDirection: String, Sendable, Codable {
    case capture
    case playback
}

/// What the server asks of a device; the device answers with the closest `NegotiatedFormat`.
public struct PCMRequest: Sendable, Equatable {
    /// Preferred hardware rate; the card's own rate wins when it cannot do this one natively.
    public var preferredRate: Int
    /// Preferred channel count (1 or 2); whatever the card offers otherwise.
    public var preferredChannels: Int
    /// Period length in milliseconds (`--period-ms`).
    public var periodMilliseconds: Int
    /// Ring buffer length in milliseconds (`--buffer-ms`).
    public var bufferMilliseconds: Int

    public init(preferredRate: Int = 48000, preferredChannels: Int, periodMilliseconds: Int = 10, bufferMilliseconds: Int = 40) {
        self.preferredRate = preferredRate
        self.preferredChannels = preferredChannels
        self.periodMilliseconds = periodMilliseconds
        self.bufferMilliseconds = bufferMilliseconds
    }

    /// Capture defaults: mono preferred, 10 ms periods in a 40 ms buffer.
    public static let capture = PCMRequest(preferredChannels: 1)
    /// Playback defaults: stereo preferred, 10 ms periods in a 40 ms buffer.
    public static let playback = PCMRequest(preferredChannels: 2)
}

/// The hardware format a device accepted.
public struct NegotiatedFormat: Sendable, Equatable, Codable {
    /// Rate, channels and sample format as the card runs them.
    public var format: AudioFormat
    /// Frames per period.
    public var periodFrames: Int
    /// Frames in the whole ring buffer.
    public var bufferFrames: Int

    public init(format: AudioFormat, periodFrames: Int, bufferFrames: Int) {
        self.format = format
        self.periodFrames = periodFrames
        self.bufferFrames = bufferFrames
    }
}

extension NegotiatedFormat: CustomStringConvertible {
    public var description: String {
        "\(format.rate) Hz, \(format.channels) ch, \(format.sampleFormat.rawValue), period \(periodFrames), buffer \(bufferFrames) frames"
    }
}
