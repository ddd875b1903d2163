import AudioGateCore
import AudioGateDevices
import Foundation
import HummingbirdWSClient
import Logging
import ServiceLifecycle
import Synchronization

/// Plays a Sendspin server's music in sync with its other players: dials the server (or waits for
/// servers to dial it), runs the Noise handshake with the player's static key, keeps the time
/// filter, decodes the chunks and hands each to a timed `music` stream stamped with the moment it
/// must leave the loudspeaker. A dialing player reconnects with back-off until graceful shutdown.
public final class SendspinClient: Service, Sendable {
    let configuration: SendspinConfiguration
    let mixer: PlaybackMixer
    let logger: Logger
    /// The server's clock.
    public let clock = SendspinClock()
    /// The operator's gesture the static pairing code waits for.
    let pairingWindow = SendspinPairingWindow()
    let state: Mutex<State>

    /// What the connection knows, for `/v1/status`.
    struct State {
        /// Through the handshake and activated by the server.
        var connected = false
        var serverName: String?
        var serverID: String?
        var activities: [String] = []
        var roles: [String] = []
        var codec: String?
        var format: SendspinStreamFormat?
        var stream: PlaybackStream?
        var volume = 100
        var muted = false
        var outputDelayMilliseconds: Int
        var playbackState: String?
        var connections = 0
        var lastError: String?
        /// The current connection handed a chunk to the stream.
        var played = false
        /// The Noise suite the next connection asks for.
        var suite: NoiseCipherSuite
        /// What is playing, as the server last said (`metadata@v1`).
        var metadata: SendspinServerState.Metadata?
        /// What the server lets the controller do (`controller@v1`).
        var controller: SendspinServerState.Controller?
        /// The connection's outgoing queue while the server has it in the controller role.
        var commands: AsyncStream<SendspinConnection.Outgoing>.Continuation?
        /// The connection holding the player, and the last number given to a connection.
        var holder: Holder?
        var generation: UInt64 = 0
        /// The server that last had the group playing here (`server_id`).
        var lastPlayedServer: String?
        /// Whether the Avahi daemon publishes the listening player as `_sendspin._tcp`.
        var advertised = false
        /// What the last `music` message said, so an unchanged state is not sent again.
        var announced: Announced?
        /// The connection is keyed by the long-term PSK of a pairing with its server.
        var paired = false
        /// The player's pairings, once its identity is loaded.
        var trust: SendspinTrustStore?
        /// The dynamic pairing code a connection's attempt shows the operator.
        var pairingCode: ShownCode?
    }

    /// A dynamic pairing code on show, and the connection whose attempt it is.
    struct ShownCode {
        var generation: UInt64
        var code: String
    }

    /// Hands a `music` message to the capture clients that asked for them.
    let announce: @Sendable (String) -> Void
    /// Says a text on the loudspeaker (the dynamic pairing code).
    let speak: @Sendable (String) async throws -> Void
    /// The playback stream the dynamic pairing code is said on.
    static let pairingCodeStream = "sendspin-pairing"

    public init(
        configuration: SendspinConfiguration, mixer: PlaybackMixer, logger: Logger,
        speak: @escaping @Sendable (String) async throws -> Void = { _ in },
        announce: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.mixer = mixer
        self.logger = logger
        self.speak = speak
        self.announce = announce
        state = Mutex(State(outputDelayMilliseconds: configuration.outputDelayMilliseconds, suite: configuration.suite))
    }

    /// The server's URL, or the address of the server that dialed in.
    public var server: String { configuration.url ?? state.withLock { $0.holder?.peer } ?? "" }

    public func run() async throws {
        let identity: SendspinIdentity
        do throws(SendspinError) {
            identity = try SendspinIdentity.loadOrCreate(directory: configuration.dataDirectory)
        } catch {
            record(error.message)
            logger.error("sendspin player off: \(error.message)")
            // A service that returns ends the server: wait for shutdown instead.
            try? await gracefulShutdown()
            return
        }
        state.withLock { $0.trust = identity.trust }
        loadLastPlayedServer()
        if let listen = configuration.listen {
            try await SendspinListener(client: self, identity: identity, address: listen).run()
            return
        }
        logger.info("sendspin player joining \(server)", metadata: ["name": "\(configuration.name)", "id": "\(identity.clientID)"])
        await PlayerConnectionLoop<SendspinErrorCode>(player: "sendspin", server: server, logger: logger).run(
            connection: { [self] in try await connectOnce(identity: identity) },
            played: { [self] in state.withLock { $0.played } },
            ended: { [self] in record($0) },
            failed: { [self] error in
                if error.code == .unsupportedSuite {
                    state.withLock { $0.suite = $0.suite == .chaChaPoly ? .aesGCM : .chaChaPoly }
                }
            })
        logger.info("sendspin player stopped")
    }

    /// One connection, start to end.
    private func connectOnce(identity: SendspinIdentity) async throws {
        countConnection()
        state.withLock { $0.played = false }
        let settings = WebSocketClientConfiguration(
            maxFrameSize: NoiseHandshake.maximumMessageBytes + 1, closeTimeout: .seconds(2),
            autoPing: .enabled(timePeriod: .seconds(10)))
        let connection = SendspinConnection(client: self, identity: identity)
        let closed: WebSocketCloseFrame?
        do {
            // A task of its own: a connection that gives up on its server cancels it, not this loop.
            async let ended = WebSocketClient.connect(url: server, configuration: settings, logger: logger) { inbound, outbound, _ in
                try await connection.run(inbound: inbound, outbound: outbound)
            }
            closed = try await ended
        } catch let error as WebSocketClientError where error == .serverSentMessageTooLarge {
            throw SendspinError(.messageTooLarge, "a WebSocket message over \(NoiseHandshake.maximumMessageBytes) bytes")
        } catch {
            if let abandoned = connection.watch.abandoned.withLock({ $0 }) { throw abandoned }
            throw error
        }
        // NIO answers a frame over the limit with a close of its own and ends the stream quietly, so
        // the one trace of it is a connection that ended without the server's close frame.
        if closed?.closeCode == .messageTooLarge {
            throw SendspinError(.messageTooLarge, "a WebSocket frame over \(NoiseHandshake.maximumMessageBytes) bytes")
        }
        if closed == nil, !Task.isCancelled {
            throw SendspinError(
                .dropped, "the connection ended without a WebSocket close (a frame over \(NoiseHandshake.maximumMessageBytes) bytes, or the server vanished)")
        }
    }

    /// One more connection for `/v1/status`.
    func countConnection() {
        state.withLock { $0.connections += 1 }
    }

    func record(_ error: String) {
        state.withLock {
            // A connection turned away leaves the one holding the player connected.
            if $0.holder == nil { $0.connected = false }
            $0.lastError = error
        }
    }

    /// Ends the connection's playing: without the server its queued audio has no clock, and what
    /// it said was playing and could be done is over.
    func closeStream() {
        state.withLock {
            $0.connected = false
            $0.paired = false
            $0.roles = []
            $0.playbackState = nil
            $0.metadata = nil
            $0.controller = nil
            $0.commands = nil
        }
        releaseStream()
        announceMusic()
    }

    /// Silences and gives back the stream (`stream/end`, or the connection's end).
    func releaseStream() {
        let stream = state.withLock { state -> PlaybackStream? in
            defer {
                state.stream = nil
                state.codec = nil
                state.format = nil
            }
            return state.stream
        }
        if let stream { mixer.release(stream) }
    }
}
