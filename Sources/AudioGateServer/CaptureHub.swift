import Logging
import AudioGateCore
import AudioGateDevices
import Synchronization

/// Receives every captured period on the capture thread and fans it out to subscribers.
public final class CaptureHub: CaptureSink {
    private struct State {
        var level = LevelMeter()
        var lastLevel = (rms: -120.0, peak: -120.0)
        var levelFrames = 0
    }

    private let state = Mutex(State())

    public init(configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger) {}

    public func captured(_ samples: UnsafeBufferPointer<Float>, frames: Int, format: AudioFormat, timestamp: UInt64) {
        state.withLock { state in
            state.level.add(samples)
            state.levelFrames += frames
            if state.levelFrames >= format.rate / 20 {
                state.lastLevel = (state.level.rmsDBFS, state.level.peakDBFS)
                state.level.reset()
                state.levelFrames = 0
            }
        }
    }

    public func captureStatusChanged(_ status: DeviceStatus) {}

    /// The level of the last 50 ms of captured audio in dBFS.
    public var lastLevel: (rms: Double, peak: Double) { state.withLock { $0.lastLevel } }

    /// Connected subscribers.
    public var subscriberCount: Int { 0 }
}
