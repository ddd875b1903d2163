/// A message the server sends as a WebSocket text frame.
public protocol ServerMessage: Sendable, Codable, Equatable {
    /// The value of the `"type"` field.
    static var type: String { get }
    /// Compact JSON with the snake_case keys of the API.
    func json() -> String
}

/// `{"type":"start","rate","channels","format","chunk_ms"}`: first message on a capture socket.
public struct StartMessage: ServerMessage {
    /// `"start"`.
    public static let type = "start"
    /// Frames per second of the stream.
    public var rate: Int
    /// Channels of the stream.
    public var channels: Int
    /// Sample format of the stream.
    public var format: SampleFormat
    /// Milliseconds of audio per chunk.
    public var chunkMs: Int
    /// The capture processing in effect (`aec`, `ns`, `agc`, `vad`).
    public var processing: VoiceProcessing?

    /// Creates the message.
    public init(rate: Int, channels: Int, format: SampleFormat, chunkMs: Int, processing: VoiceProcessing? = nil) {
        self.rate = rate
        self.channels = channels
        self.format = format
        self.chunkMs = chunkMs
        self.processing = processing
    }

    enum CodingKeys: String, CodingKey { case type, rate, channels, format, chunkMs = "chunk_ms", processing }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        rate = try container.decode(Int.self, forKey: .rate)
        channels = try container.decode(Int.self, forKey: .channels)
        format = try container.decode(SampleFormat.self, forKey: .format)
        chunkMs = try container.decode(Int.self, forKey: .chunkMs)
        processing = try container.decodeIfPresent(VoiceProcessing.self, forKey: .processing)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(rate, forKey: .rate)
        try container.encode(channels, forKey: .channels)
        try container.encode(format, forKey: .format)
        try container.encode(chunkMs, forKey: .chunkMs)
        try container.encodeIfPresent(processing, forKey: .processing)
    }

    /// Compact JSON.
    public func json() -> String {
        let head = "{\"type\":\"start\",\"rate\":\(rate),\"channels\":\(channels),\"format\":\"\(format.rawValue)\",\"chunk_ms\":\(chunkMs)"
        guard let processing else { return head + "}" }
        return head + ",\"processing\":" + processing.json() + "}"
    }
}

/// `{"type":"audio","seq","timestamp_ms","data"}`: one chunk of capture audio, base64 PCM.
public struct AudioMessage: ServerMessage {
    /// `"audio"`.
    public static let type = "audio"
    /// Chunk number, from 0 without gaps.
    public var seq: UInt64
    /// Capture time of the first sample on `MonotonicClock`, in milliseconds.
    public var timestampMs: Double
    /// Base64 of the chunk's PCM bytes.
    public var data: String

    /// Creates the message from already-encoded base64.
    public init(seq: UInt64, timestampMs: Double, data: String) {
        self.seq = seq
        self.timestampMs = timestampMs
        self.data = data
    }

    /// Creates the message from PCM bytes.
    public init(seq: UInt64, timestampMs: Double, pcm: UnsafeRawBufferPointer) {
        self.init(seq: seq, timestampMs: timestampMs, data: Base64.encode(pcm))
    }

    enum CodingKeys: String, CodingKey { case type, seq, timestampMs = "timestamp_ms", data }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        seq = try container.decode(UInt64.self, forKey: .seq)
        timestampMs = try container.decode(Double.self, forKey: .timestampMs)
        data = try container.decode(String.self, forKey: .data)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(seq, forKey: .seq)
        try container.encode(timestampMs, forKey: .timestampMs)
        try container.encode(data, forKey: .data)
    }

    /// Compact JSON (`timestamp_ms` to microsecond precision).
    public func json() -> String {
        Self.prefix(seq: seq, timestampMs: timestampMs) + data + "\"}"
    }

    /// Compact JSON built straight from PCM bytes in a single allocation (the hot capture path).
    public static func json(seq: UInt64, timestampMs: Double, pcm: UnsafeRawBufferPointer) -> String {
        let head = prefix(seq: seq, timestampMs: timestampMs)
        var headBytes = head
        let total = head.utf8.count + Base64.encodedLength(pcm.count) + 2
        return String(unsafeUninitializedCapacity: total) { output in
            let written = headBytes.withUTF8 { utf8 in
                UnsafeMutableRawBufferPointer(output).copyMemory(from: UnsafeRawBufferPointer(utf8))
                return utf8.count
            }
            let encoded = Base64.encode(pcm, into: UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: output[written...])))
            output[written + encoded] = UInt8(ascii: "\"")
            output[written + encoded + 1] = UInt8(ascii: "}")
            return written + encoded + 2
        }
    }

    private static func prefix(seq: UInt64, timestampMs: Double) -> String {
        "{\"type\":\"audio\",\"seq\":\(seq),\"timestamp_ms\":\(JSONText.number(timestampMs, decimals: 3)),\"data\":\""
    }
}

/// `{"type":"level","rms_dbfs","peak_dbfs"}`: capture level, both floored at -120.
public struct LevelMessage: ServerMessage {
    /// `"level"`.
    public static let type = "level"
    /// RMS level in dBFS.
    public var rmsDBFS: Double
    /// Peak level in dBFS.
    public var peakDBFS: Double

    /// Creates the message.
    public init(rmsDBFS: Double, peakDBFS: Double) {
        self.rmsDBFS = rmsDBFS
        self.peakDBFS = peakDBFS
    }

    /// Creates the message from a meter's current reading.
    public init(_ meter: LevelMeter) {
        self.init(rmsDBFS: meter.rmsDBFS, peakDBFS: meter.peakDBFS)
    }

    enum CodingKeys: String, CodingKey { case type, rmsDBFS = "rms_dbfs", peakDBFS = "peak_dbfs" }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        rmsDBFS = try container.decode(Double.self, forKey: .rmsDBFS)
        peakDBFS = try container.decode(Double.self, forKey: .peakDBFS)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(rmsDBFS.isFinite ? rmsDBFS : LevelMeter.floorDBFS, forKey: .rmsDBFS)
        try container.encode(peakDBFS.isFinite ? peakDBFS : LevelMeter.floorDBFS, forKey: .peakDBFS)
    }

    /// Compact JSON (values to 0.01 dB).
    public func json() -> String {
        let rms = JSONText.number(rmsDBFS, decimals: 2, fallback: LevelMeter.floorDBFS)
        let peak = JSONText.number(peakDBFS, decimals: 2, fallback: LevelMeter.floorDBFS)
        return "{\"type\":\"level\",\"rms_dbfs\":\(rms),\"peak_dbfs\":\(peak)}"
    }
}

/// `{"type":"overrun","dropped_ms"}`: this client fell behind and lost its oldest audio.
public struct OverrunMessage: ServerMessage {
    /// `"overrun"`.
    public static let type = "overrun"
    /// Milliseconds of audio dropped.
    public var droppedMs: Int

    /// Creates the message.
    public init(droppedMs: Int) { self.droppedMs = droppedMs }

    enum CodingKeys: String, CodingKey { case type, droppedMs = "dropped_ms" }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        droppedMs = try container.decode(Int.self, forKey: .droppedMs)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(droppedMs, forKey: .droppedMs)
    }

    /// Compact JSON.
    public func json() -> String { "{\"type\":\"overrun\",\"dropped_ms\":\(droppedMs)}" }
}

/// `{"type":"device","state"}`: the capture device was lost or restored.
public struct DeviceMessage: ServerMessage {
    /// `"device"`.
    public static let type = "device"
    /// Device states a client is told about.
    public enum State: String, Sendable, Codable, Equatable {
        /// The device disappeared; the server keeps reopening it.
        case lost
        /// The device is back and audio flows again.
        case restored
    }
    /// The new state.
    public var state: State

    /// Creates the message.
    public init(state: State) { self.state = state }

    enum CodingKeys: String, CodingKey { case type, state }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        state = try container.decode(State.self, forKey: .state)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(state, forKey: .state)
    }

    /// Compact JSON.
    public func json() -> String { "{\"type\":\"device\",\"state\":\"\(state.rawValue)\"}" }
}

/// `{"type":"mark","name"}`: all audio sent before the client's mark has left the speaker.
public struct MarkMessage: ServerMessage {
    /// `"mark"`.
    public static let type = "mark"
    /// The client's mark name, echoed.
    public var name: String

    /// Creates the message.
    public init(name: String) { self.name = name }

    enum CodingKeys: String, CodingKey { case type, name }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        name = try container.decode(String.self, forKey: .name)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(name, forKey: .name)
    }

    /// Compact JSON.
    public func json() -> String { "{\"type\":\"mark\",\"name\":\(JSONText.quoted(name))}" }
}

/// `{"type":"cleared","played_ms","flushed_ms"}`: answer to a client's clear (barge-in).
public struct ClearedMessage: ServerMessage {
    /// `"cleared"`.
    public static let type = "cleared"
    /// Milliseconds of this stream's audio heard so far.
    public var playedMs: Int
    /// Milliseconds of queued audio thrown away.
    public var flushedMs: Int

    /// Creates the message.
    public init(playedMs: Int, flushedMs: Int) {
        self.playedMs = playedMs
        self.flushedMs = flushedMs
    }

    enum CodingKeys: String, CodingKey { case type, playedMs = "played_ms", flushedMs = "flushed_ms" }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        playedMs = try container.decode(Int.self, forKey: .playedMs)
        flushedMs = try container.decode(Int.self, forKey: .flushedMs)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(playedMs, forKey: .playedMs)
        try container.encode(flushedMs, forKey: .flushedMs)
    }

    /// Compact JSON.
    public func json() -> String {
        "{\"type\":\"cleared\",\"played_ms\":\(playedMs),\"flushed_ms\":\(flushedMs)}"
    }
}

/// `{"type":"drained"}`: this stream's queue ran empty.
public struct DrainedMessage: ServerMessage {
    /// `"drained"`.
    public static let type = "drained"

    /// Creates the message.
    public init() {}

    enum CodingKeys: String, CodingKey { case type }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
    }

    /// Compact JSON.
    public func json() -> String { "{\"type\":\"drained\"}" }
}

/// `{"type":"error","code","message"}`: a problem with this socket's input or stream.
public struct ErrorMessage: ServerMessage {
    /// `"error"`.
    public static let type = "error"
    /// snake_case error code.
    public var code: String
    /// Human-readable sentence.
    public var message: String

    /// Creates the message.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    /// Creates the message from a protocol decoding error.
    public init(_ error: ProtocolError) {
        self.init(code: error.code.rawValue, message: error.message)
    }

    enum CodingKeys: String, CodingKey { case type, code, message }

    /// Decodes and checks `type`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try checkType(container, CodingKeys.type, Self.type)
        code = try container.decode(String.self, forKey: .code)
        message = try container.decode(String.self, forKey: .message)
    }

    /// Encodes with `type`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.type, forKey: .type)
        try container.encode(code, forKey: .code)
        try container.encode(message, forKey: .message)
    }

    /// Compact JSON.
    public func json() -> String {
        "{\"type\":\"error\",\"code\":\(JSONText.quoted(code)),\"message\":\(JSONText.quoted(message))}"
    }
}

/// Throws when a decoded message's `type` is not the expected one.
func checkType<Key: CodingKey>(
    _ container: KeyedDecodingContainer<Key>, _ key: Key, _ expected: String
) throws {
    let type = try container.decode(String.self, forKey: key)
    guard type == expected else {
        throw DecodingError.dataCorruptedError(
            forKey: key, in: container, debugDescription: "expected type \"\(expected)\", got \"\(type)\"")
    }
}
