import NIOCore

/// A message from a snapserver, as `SnapcastFrameDecoder` reads it.
public enum SnapcastMessage: Sendable {
    /// Buffer, latency, volume and mute for this client.
    case serverSettings(SnapcastServerSettings)
    /// The codec and what its decoder must be initialised with.
    case codecHeader(SnapcastCodecHeader)
    /// One decodable chunk: the server time of its first sample and its encoded bytes.
    case wireChunk(timestamp: SnapcastTimestamp, payload: ByteBuffer)
    /// The answer to a Time request; `receivedNanoseconds` is our clock when its bytes arrived.
    case time(SnapcastTimeReply)
    /// A message this client has no use for (stream tags, client info).
    case ignored(type: UInt16)
}

/// What the server sends in ServerSettings (a JSON object).
public struct SnapcastServerSettings: Sendable, Equatable, Decodable {
    /// The buffers accepted: snapserver's default is 1000 ms; a minute is far past any real setting.
    public static let bufferMsRange = 0...60_000
    /// The client latencies accepted, in milliseconds: ten seconds either way is far past any real setting.
    public static let latencyRange = -10_000...10_000
    /// Snapcast volumes are percentages.
    public static let volumeRange = 0...100

    /// How far ahead of its own clock the server stamps chunks, in milliseconds.
    public var bufferMs: Int
    /// Latency configured for this client on the server, in milliseconds.
    public var latency: Int
    /// Volume 0-100.
    public var volume: Int
    public var muted: Bool

    public init(bufferMs: Int, latency: Int, volume: Int, muted: Bool) {
        self.bufferMs = bufferMs
        self.latency = latency
        self.volume = volume
        self.muted = muted
    }

    enum CodingKeys: String, CodingKey { case bufferMs, latency, volume, muted }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        bufferMs = try container.decodeIfPresent(Int.self, forKey: .bufferMs) ?? 1000
        latency = try container.decodeIfPresent(Int.self, forKey: .latency) ?? 0
        volume = try container.decodeIfPresent(Int.self, forKey: .volume) ?? 100
        muted = try container.decodeIfPresent(Bool.self, forKey: .muted) ?? false
    }

    /// Throws `.outOfRange` naming the first number outside its range: the clock arithmetic only
    /// ever sees bounded values.
    public func check() throws(SnapcastError) {
        for (name, value, range) in [
            ("bufferMs", bufferMs, Self.bufferMsRange), ("latency", latency, Self.latencyRange), ("volume", volume, Self.volumeRange),
        ] where !range.contains(value) {
            throw SnapcastError(.outOfRange, "\(name) \(value) is outside \(range.lowerBound)...\(range.upperBound)")
        }
    }
}

/// The codec name and its header bytes.
public struct SnapcastCodecHeader: Sendable, Equatable {
    /// `pcm`, `flac`, `ogg` or `opus`.
    public var codec: String
    public var payload: [UInt8]

    public init(codec: String, payload: [UInt8]) {
        self.codec = codec
        self.payload = payload
    }
}

/// A Time answer: the server's stamps and the one-way latency it measured for our request.
public struct SnapcastTimeReply: Sendable, Equatable {
    /// The id of the request it answers.
    public var refersTo: UInt16
    /// Server receive time minus our send time, as the server computed it.
    public var latency: SnapcastTimestamp
    /// The server's clock when it sent the answer.
    public var sent: SnapcastTimestamp
    /// Our CLOCK_MONOTONIC when the answer arrived.
    public var receivedNanoseconds: UInt64

    public init(refersTo: UInt16, latency: SnapcastTimestamp, sent: SnapcastTimestamp, receivedNanoseconds: UInt64) {
        self.refersTo = refersTo
        self.latency = latency
        self.sent = sent
        self.receivedNanoseconds = receivedNanoseconds
    }

    /// Server minus client clock in microseconds, as snapclient's `TimeProvider::setDiff` computes it:
    /// half the difference of the two one-way latencies, so a symmetric network delay cancels.
    public var diffMicroseconds: Double {
        let received = SnapcastTimestamp(nanoseconds: receivedNanoseconds)
        let serverToClient = received.totalMicroseconds - sent.totalMicroseconds
        return Double(latency.totalMicroseconds - serverToClient) / 2
    }
}

/// A message to a snapserver, as `SnapcastFrameEncoder` writes it.
public enum SnapcastRequest: Sendable {
    /// The first message: who this client is (a JSON object).
    case hello(id: UInt16, json: [UInt8])
    /// A clock probe; the encoder stamps it with the time it is written.
    case time(id: UInt16)
}
