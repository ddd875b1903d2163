/// Bounds on what a Wyoming peer may send in one event; beyond them the connection is closed.
public struct WyomingLimits: Sendable, Equatable {
    /// Longest header line, newline included.
    public var maxHeaderBytes = 64 << 10
    /// Largest `data_length`.
    public var maxDataBytes = 64 << 10
    /// Largest `payload_length` (a reference client sends 1024-sample chunks of a few KiB).
    public var maxPayloadBytes = 1 << 20
    /// Deepest nesting of arrays and objects in a header or data object.
    public var maxNesting = 32
    /// Most connections one service holds at once; more are closed at once.
    public var maxClients = 64
    /// Most `audio-stop`s of one snd connection still waiting for `played` (each holds a mark).
    public var maxPendingPlayed = 256

    /// The documented defaults.
    public init() {}
}
