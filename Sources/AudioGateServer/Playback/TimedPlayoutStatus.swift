/// How a timed stream plays, as every network player (the Snapcast client, the Sendspin player)
/// shows it beside its own fields in `/v1/status`.
struct TimedPlayoutStatus: Encodable, Equatable {
    /// Audio held by the timed stream, milliseconds.
    var queuedMs: Double
    /// Single frames dropped and inserted to follow the server's clock.
    var framesDropped: UInt64
    var framesInserted: UInt64
    /// Chunks that arrived too late to play, and resyncs.
    var lateChunks: UInt64
    var resyncs: UInt64
    /// Last period: played time minus presentation time, milliseconds (null when not playing).
    var playOffsetMs: Double?

    /// The stream's figures; zeros before a stream exists.
    init(_ statistics: TimedPlaybackStatistics?) {
        queuedMs = statistics?.bufferedMilliseconds ?? 0
        framesDropped = UInt64(statistics?.framesDropped ?? 0)
        framesInserted = UInt64(statistics?.framesInserted ?? 0)
        lateChunks = UInt64(statistics?.lateChunks ?? 0)
        resyncs = UInt64(statistics?.resyncs ?? 0)
        playOffsetMs = statistics?.offsetMicroseconds.map { $0 / 1000 }
    }
}
