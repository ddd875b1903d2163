import AudioGateCore
import Foundation

/// `{"type":"music","player","playback_state","metadata","timestamp_ms"}` on a capture WebSocket
/// that asked for `music=true`: what the music player (Sendspin) plays, sent when a client asks
/// and whenever it changes; `metadata` null once nothing is known (the server went away).
struct MusicMessage: Encodable, Equatable {
    let type = "music"
    /// `sendspin`.
    var player: String
    /// The group's `playing` or `stopped`, when the server said.
    var playbackState: String?
    /// What `/v1/status` shows for the player's metadata.
    var metadata: SendspinMetadataStatus?
    /// When this was true (monotonic milliseconds, the capture chunks' clock).
    var timestampMs: Double

    /// Compact JSON, `metadata` written as null rather than left out.
    func json() -> String {
        var fields = "{\"metadata\":"
        if let metadata, let data = try? JSONResponse.encoder.encode(metadata) {
            fields += String(decoding: data, as: UTF8.self)
        } else {
            fields += "null"
        }
        fields += ",\"player\":" + JSONText.quoted(player)
        fields += ",\"playback_state\":" + (playbackState.map(JSONText.quoted) ?? "null")
        fields += ",\"timestamp_ms\":" + JSONText.number(timestampMs)
        return fields + ",\"type\":\"music\"}"
    }
}
