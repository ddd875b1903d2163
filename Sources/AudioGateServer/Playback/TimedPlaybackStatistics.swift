/// What a timed stream did since it was created.
public struct TimedPlaybackStatistics: Sendable, Codable, Equatable {
    /// Audio queued ahead of the speaker, in milliseconds.
    public var bufferedMilliseconds: Double = 0
    /// Single frames dropped to catch up (drift correction).
    public var framesDropped = 0
    /// Single frames repeated to wait (drift correction).
    public var framesInserted = 0
    /// Chunks whose start was already past when it was due (dropped, whole or in part).
    public var lateChunks = 0
    /// Frames dropped because they were late.
    public var lateFrames = 0
    /// Times the stream was more than 50 ms off and started over with a fade.
    public var resyncs = 0
    /// Times the queue ran dry while playing.
    public var underruns = 0
    /// How late the last period's first frame played against its presentation time, in
    /// microseconds (negative: early), while playing.
    public var offsetMicroseconds: Double?

    public init() {}
}
