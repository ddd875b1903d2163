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
