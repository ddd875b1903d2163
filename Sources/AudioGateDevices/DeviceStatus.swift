/// A snapshot of one device loop, for `/v1/status`, `/v1/info` and metrics.
public struct DeviceStatus: Sendable, Equatable {
    /// The name the loop opens (an ALSA PCM name or `loopback`).
    public var name: String
    /// Capture or playback.
    public var direction: PCMDirection
    /// Running, recovering, unavailable or idle.
    public var state: DeviceState
    /// The hardware format of the current (or last) open.
    public var negotiated: NegotiatedFormat?
    /// Overruns (capture) or underruns (playback) recovered with `snd_pcm_prepare`.
    public var xruns: Int = 0
    /// Playback only: times the loop found the device's buffer played out or within a frame of it,
    /// whether or not the device reported an underrun; sound-server plugins may not.
    public var ranEmpty: Int = 0
    /// Suspends recovered with `snd_pcm_resume`.
    public var suspends: Int = 0
    /// Successful opens after the first one.
    public var reopens: Int = 0
    /// Frames moved through the device since the loop started.
    public var frames: UInt64 = 0
    /// The most recent device error, if any.
    public var lastError: String?

    public init(name: String, direction: PCMDirection, state: DeviceState = .recovering) {
        self.name = name
        self.direction = direction
        self.state = state
    }
}
