/// A network player's status in `/v1/status` (the Snapcast client, the Sendspin player): what
/// every player has, its own fields, and its timed stream's playout, as one flat JSON object.
struct PlayerStatus<Player: Encodable & Equatable>: Encodable, Equatable {
    /// Connected to the server (and, where the protocol has it, activated).
    var connected: Bool
    /// The server's address.
    var server: String
    /// Server clock minus local clock now, milliseconds (null before the first measurement).
    var clockOffsetMs: Double?
    /// The player's own fields.
    var player: Player
    /// How its timed stream plays.
    var playout: TimedPlayoutStatus
    /// Connections made since start (a reconnect adds one).
    var connections: Int
    /// Why the last connection ended or failed.
    var lastError: String?

    private enum CodingKeys: String, CodingKey { case connected, server, clockOffsetMs, connections, lastError }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(connected, forKey: .connected)
        try container.encode(server, forKey: .server)
        try container.encodeIfPresent(clockOffsetMs, forKey: .clockOffsetMs)
        try container.encode(connections, forKey: .connections)
        try container.encodeIfPresent(lastError, forKey: .lastError)
        try player.encode(to: encoder)
        try playout.encode(to: encoder)
    }
}
