import NIOCore

/// One Wyoming event: a type, a JSON data object and an optional binary payload.
public struct WyomingEvent: Sendable, Equatable {
    /// The event type, e.g. `describe`, `audio-chunk`.
    public var type: String
    /// The data object (inline and separate data merged).
    public var data: [String: WyomingValue]
    /// The binary payload (audio for `audio-chunk`).
    public var payload: ByteBuffer?

    /// An event with optional data and payload.
    public init(type: String, data: [String: WyomingValue] = [:], payload: ByteBuffer? = nil) {
        self.type = type
        self.data = data
        self.payload = payload
    }
}

extension WyomingEvent {
    /// The event types audiogate reads and writes.
    public enum Kind {
        public static let describe = "describe"
        public static let info = "info"
        public static let audioStart = "audio-start"
        public static let audioChunk = "audio-chunk"
        public static let audioStop = "audio-stop"
        public static let played = "played"
        public static let ping = "ping"
        public static let pong = "pong"
    }

    /// `audio-start`, `audio-chunk` or `audio-stop` with the format fields the `wyoming` package writes.
    static func audio(
        _ type: String, rate: Int, width: Int, channels: Int, timestamp: Int?, payload: ByteBuffer? = nil
    ) -> WyomingEvent {
        var data: [String: WyomingValue] = [
            "rate": .number(Double(rate)), "width": .number(Double(width)), "channels": .number(Double(channels)),
        ]
        if let timestamp { data["timestamp"] = .number(Double(timestamp)) }
        return WyomingEvent(type: type, data: data, payload: payload)
    }
}
