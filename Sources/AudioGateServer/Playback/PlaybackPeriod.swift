/// The period the device thread is mixing: where it starts on the device and, for timed streams,
/// when its first frame leaves the card.
struct PlaybackPeriod {
    /// Device frame of the period's first frame.
    var startFrame: UInt64
    /// Monotonic nanoseconds at which that frame leaves the card; nil until the output is dated
    /// (timed streams stay silent until then).
    var leaveTime: Double?
}
