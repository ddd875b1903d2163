import AudioGateCore

/// Supplies audio to the playback thread; must not block or wait on clients.
public protocol PlaybackSource: Sendable {
    /// Fills `buffer` with `frames` interleaved frames at the hardware format, starting at
    /// device frame `startFrame` (frames written to the card since the loop started).
    func render(into buffer: UnsafeMutableBufferPointer<Float>, frames: Int, format: AudioFormat, startFrame: UInt64)
    /// After each write: frames written so far, and the device's clock, which dates device frames
    /// by when they leave the card (not anchored after a reopen or a dropped buffer: nothing is
    /// ahead of the speaker then).
    func playbackProgress(framesWritten: UInt64, clock: DeviceClock)
    /// The device was lost, restored, or underran.
    func playbackStatusChanged(_ status: DeviceStatus)
    /// Whether anything plays or may play soon; when nothing has for the idle period the loop stops the device.
    var needsDevice: Bool { get }
}

extension PlaybackSource {
    public var needsDevice: Bool { true }
}
