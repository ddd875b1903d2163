import AudioGateCore

/// Receives captured audio on the capture thread; must not block or wait on clients.
public protocol CaptureSink: Sendable {
    /// One or more periods of interleaved frames at the hardware format; `timestamp` is the monotonic
    /// nanosecond time the first frame was captured.
    func captured(_ samples: UnsafeBufferPointer<Float>, frames: Int, format: AudioFormat, timestamp: UInt64)
    /// The device was lost, restored, or lost frames to an overrun.
    func captureStatusChanged(_ status: DeviceStatus)
    /// Whether anyone listens; when nobody has for the idle period the loop stops the device.
    var needsDevice: Bool { get }
    /// How long, in milliseconds, listeners can wait for audio: the loop then reads that much at
    /// once (whole periods, at most half the buffer) and wakes once for it instead of every period.
    /// 0 reads every period.
    var batchMilliseconds: Int { get }
}

extension CaptureSink {
    public var needsDevice: Bool { true }
    public var batchMilliseconds: Int { 0 }
}
