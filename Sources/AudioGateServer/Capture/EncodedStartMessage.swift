import AudioGateCore

/// The `start` message of a `format=opus` capture WebSocket: the stream's codec, rate, channels,
/// packet length, bitrate and the Opus pre-skip a decoder drops from the start.
struct EncodedStartMessage: Sendable, Equatable {
    var codec: String
    var rate: Int
    var channels: Int
    var chunkMs: Int
    var bitrate: Int?
    /// Samples at 48 kHz to drop from the decoded start (RFC 7845's pre-skip).
    var preSkip: Int
    var processing: VoiceProcessing?

    /// Compact JSON with the API's snake_case keys.
    func json() -> String {
        var text = "{\"type\":\"start\",\"format\":\"\(codec)\",\"codec\":\"\(codec)\",\"rate\":\(rate),\"channels\":\(channels)"
        text += ",\"chunk_ms\":\(chunkMs),\"pre_skip\":\(preSkip)"
        if let bitrate { text += ",\"bitrate\":\(bitrate)" }
        if let processing { text += ",\"processing\":" + processing.json() }
        return text + "}"
    }
}
