import Logging
import AudioGateCore
import AudioGateDevices
import Synchronization

/// Mixes the playback streams on the playback thread; silence when nothing is queued.
public final class PlaybackMixer: PlaybackSource {
    public init(configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger) {}

    public func render(into buffer: UnsafeMutableBufferPointer<Float>, frames: Int, format: AudioFormat, startFrame: UInt64) {
        buffer.update(repeating: 0)
    }

    public func playbackProgress(framesWritten: UInt64, delayFrames: Int) {}

    public func playbackStatusChanged(_ status: DeviceStatus) {}

    /// Active streams.
    public var streamCount: Int { 0 }
    /// Audio queued across streams, in milliseconds.
    public var queuedMilliseconds: Double { 0 }
    /// Stream underruns (a stream's queue ran dry mid-audio).
    public var underruns: Int { 0 }
}
