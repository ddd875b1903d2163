import AudioGateCore

/// Receives captured audio on the capture thread; must not block or wait on clients.
public protocol CaptureSink: Sendable {
    /// One period of interleaved frames at the hardware format; `timestamp` is the monotonic
    /// nanosecond time the first frame was captured.
    func captured(_ samples: UnsafeBufferPointer<Float>, frames: Int, format: AudioFormat, timestamp: UInt64)
    /// The device was lost, restored, or lost frames to an overrun.
    func captureStatusChanged(_ status: DeviceStatus)
    /// Whether anyone listens; when nobody has for the idle period the loop stops the device.
    var needsDevice: Bool { get }
}

extension CaptureSink {
    public var needsDevice: Bool { true }
}
