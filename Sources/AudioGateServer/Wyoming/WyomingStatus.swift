/// The Wyoming services in `/v1/info` (their ports) and `/v1/status` (their clients).
struct WyomingStatus: Encodable, Equatable {
    /// The mic service's port, nil when it is off.
    var micPort: Int?
    /// The snd service's port, nil when it is off.
    var sndPort: Int?
    /// Connections open on the mic service.
    var micClients: Int
    /// Connections open on the snd service.
    var sndClients: Int

    enum CodingKeys: CodingKey {
        case micPort, sndPort, micClients, sndClients
    }

    func encode(to encoder: any Encoder) throws {
        // Ports are written as null when off, so clients see the services exist.
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(micPort, forKey: .micPort)
        try container.encode(sndPort, forKey: .sndPort)
        try container.encode(micClients, forKey: .micClients)
        try container.encode(sndClients, forKey: .sndClients)
    }
}

extension AudioGateServer {
    /// Ports and client counts of the Wyoming services.
    var wyomingStatus: WyomingStatus {
        let mic = wyoming.first { $0.role == .mic }
        let snd = wyoming.first { $0.role == .snd }
        return WyomingStatus(
            micPort: mic?.port, sndPort: snd?.port, micClients: mic?.clientCount ?? 0, sndClients: snd?.clientCount ?? 0)
    }
}
