import Foundation
import NIOPosix

/// The player is held by one server connection at a time. A connection claims it at
/// `server/hello`; when servers dial the player (`--sendspin-port`) a second one is kept or turned
/// away by the specification's rule: a server dialing for `playback` takes over, one dialing for
/// `discovery` stays out unless it is the server that last played here and the holder came for
/// discovery too.
extension SendspinClient {
    /// The connection holding the player.
    struct Holder {
        let generation: UInt64
        let serverID: String
        /// `playback` or `discovery`: why the server dialed (`discovery` when its hello gives none).
        let reason: String
        /// The address of a server that dialed the player.
        let peer: String?
        /// Says goodbye (`another_server`) and closes the connection.
        let evict: @Sendable () -> Void
    }

    /// A number for a new connection, to tell its claims apart.
    func nextGeneration() -> UInt64 {
        state.withLock {
            $0.generation += 1
            return $0.generation
        }
    }

    /// Gives the player to connection `generation` or refuses it (false). A connection it takes
    /// the player from is told to go, and its stream, metadata and commands end with it.
    func claim(
        generation: UInt64, serverName: String, serverID: String, reason: String, peer: String?,
        evict: @escaping @Sendable () -> Void
    ) -> Bool {
        let outcome = state.withLock { state -> (granted: Bool, evicted: Holder?) in
            if let holder = state.holder {
                let takesOver =
                    reason == "playback" || (holder.reason != "playback" && serverID == state.lastPlayedServer && holder.serverID != serverID)
                guard takesOver else { return (false, nil) }
            }
            let evicted = state.holder
            state.holder = Holder(generation: generation, serverID: serverID, reason: reason, peer: peer, evict: evict)
            state.serverName = String(serverName.prefix(128))
            state.serverID = serverID
            state.connected = false
            state.playbackState = nil
            state.metadata = nil
            state.controller = nil
            state.commands = nil
            return (true, evicted)
        }
        guard outcome.granted else { return false }
        if let evicted = outcome.evicted {
            logger.info("sendspin server \(serverID.prefix(12)) takes the player (\(reason)) from \(evicted.serverID.prefix(12))")
            evicted.evict()
            releaseStream()
        }
        clock.reset()
        announceMusic()
        return true
    }

    /// Whether connection `generation` holds the player.
    func holds(_ generation: UInt64) -> Bool {
        state.withLock { $0.holder?.generation == generation }
    }

    /// Connection `generation` ended: when it held the player, its playing ends.
    func release(_ generation: UInt64) {
        pairingWindow.forget(generation)
        let held = state.withLock { state -> Bool in
            if state.pairingCode?.generation == generation { state.pairingCode = nil }
            guard state.holder?.generation == generation else { return false }
            state.holder = nil
            return true
        }
        if held { closeStream() }
    }

    /// The group started playing: this server is the one that last played here, kept in the data
    /// directory so a restart still knows it.
    func playing(serverID: String) async {
        let changed = state.withLock { state -> Bool in
            defer { state.lastPlayedServer = serverID }
            return state.lastPlayedServer != serverID
        }
        guard changed else { return }
        let path = lastPlayedServerPath
        // A file write can block: it runs off the event loops, whose tasks read the sockets.
        _ = try? await NIOThreadPool.singleton.runIfActive { try (serverID + "\n").write(toFile: path, atomically: true, encoding: .utf8) }
    }

    /// `<data dir>/sendspin-last-server`.
    var lastPlayedServerPath: String { ServerConfiguration.path("sendspin-last-server", in: configuration.dataDirectory) }

    /// The last played server a previous run kept.
    func loadLastPlayedServer() {
        guard let text = try? String(contentsOfFile: lastPlayedServerPath, encoding: .utf8) else { return }
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard id.count == 43, Base64URL.decode(id) != nil else { return }
        state.withLock { $0.lastPlayedServer = id }
    }
}
