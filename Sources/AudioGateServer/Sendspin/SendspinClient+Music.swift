import AudioGateCore

/// `music` events: what the Sendspin server says plays, for capture clients that asked.
extension SendspinClient {
    /// What a `music` message said, apart from its moment.
    struct Announced: Equatable {
        var playbackState: String?
        var metadata: SendspinServerState.Metadata?
    }

    /// Sends what plays now, unless the last message already said it.
    func announceMusic() {
        let current = state.withLock { state -> Announced? in
            let now = Announced(playbackState: state.playbackState, metadata: state.metadata)
            // Nothing was ever said, or nothing changed: no message.
            guard now != (state.announced ?? Announced()) else { return nil }
            state.announced = now
            return now
        }
        guard let current else { return }
        let now = MonotonicClock.nowNanoseconds()
        let metadata = current.metadata.map { metadata in
            SendspinMetadataStatus(metadata, serverNow: clock.offsetMicroseconds.map { Double(now / 1000) + $0 })
        }
        let message = MusicMessage(
            player: "sendspin", playbackState: current.playbackState, metadata: metadata.flatMap { $0.isEmpty ? nil : $0 },
            timestampMs: Double(now) / 1e6)
        announce(message.json())
    }
}
