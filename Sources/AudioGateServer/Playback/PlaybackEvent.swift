import AudioGateCore

/// Something a playback stream tells the connections that use it.
public enum PlaybackEvent: Sendable, Equatable {
    /// The audio queued before this mark has left the speaker.
    case mark(name: String)
    /// The stream was flushed; `renderedFrame` is the stream frame the card stopped at, `id` the clear's own.
    case cleared(playedMilliseconds: Int, flushedMilliseconds: Int, renderedFrame: UInt64, id: String?)
    /// The first frame of audio after silence (the stream opened, drained or cleared) was heard.
    case started
    /// The stream's queue ran empty and all of it was heard.
    case drained
    /// A problem with this connection's input.
    case error(code: String, message: String)

    /// The WebSocket text frame.
    public var json: String {
        switch self {
        case .mark(let name): MarkMessage(name: name).json()
        case .cleared(let played, let flushed, _, let id): ClearedMessage(playedMs: played, flushedMs: flushed, id: id).json()
        case .started: StartedMessage().json()
        case .drained: DrainedMessage().json()
        case .error(let code, let message): ErrorMessage(code: code, message: message).json()
        }
    }
}
