import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// One Wyoming TCP service (mic or snd): accepts connections until graceful shutdown, then closes them.
public final class WyomingService: Service, Sendable {
    /// Which side of the sound card the service offers.
    public enum Role: String, Sendable {
        /// Captured audio out (`audio-start`, `audio-chunk`).
        case mic
        /// Audio in, played through the mixer (`played` once heard).
        case snd
    }

    /// The connection type: decoded events in, events to encode out.
    typealias Connection = NIOAsyncChannel<WyomingEvent, WyomingEvent>

    /// mic or snd.
    public let role: Role
    let host: String
    let requestedPort: Int
    let configuration: WyomingConfiguration
    /// How long part of an event may wait for the rest (`--idle-timeout`, see `WyomingIdleHandler`).
    let idleTimeout: TimeAmount
    let engine: AudioEngine
    let logger: Logger
    private let bound = Mutex<Int?>(nil)
    private let connections = Atomic<Int>(0)
    /// Playback streams held by snd connections now.
    private let streamsInUse = Mutex<Set<String>>([])

    /// A service on `host:port` (port 0: any free port, see `port`); a peer that sends part of an
    /// event and then nothing for `idleTimeout` is closed.
    public init(
        role: Role, host: String, port: Int, configuration: WyomingConfiguration, idleTimeout: TimeAmount = .seconds(60),
        engine: AudioEngine, logger: Logger
    ) {
        self.role = role
        self.host = host
        requestedPort = port
        self.configuration = configuration
        self.idleTimeout = idleTimeout
        self.engine = engine
        self.logger = logger
    }

    /// The port the service listens on, once bound.
    public var port: Int? { bound.withLock { $0 } }

    /// Connections open right now.
    public var clientCount: Int { connections.load(ordering: .relaxed) }

    public func run() async throws {
        let limits = configuration.limits
        let idleTimeout = idleTimeout
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .bind(host: host, port: requestedPort) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let partial = WyomingPartialEvent()
                    try channel.pipeline.syncOperations.addHandler(WyomingIdleHandler(timeout: idleTimeout, partial: partial))
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(WyomingFrameDecoder(limits: limits, partial: partial)))
                    try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(WyomingFrameEncoder()))
                    return try Connection(wrappingChannelSynchronously: channel)
                }
            }
        let port = server.channel.localAddress?.port
        bound.withLock { $0 = port }
        logger.info("wyoming \(role.rawValue) service listening", metadata: ["host": "\(host)", "port": "\(port ?? 0)"])
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { inbound in
                    for try await connection in inbound {
                        group.addTask { await self.serve(connection) }
                    }
                }
            }
        } onGracefulShutdown: {
            server.channel.close(promise: nil)
        }
        logger.info("wyoming \(role.rawValue) service stopped")
    }

    /// Runs one connection to its end; whatever the peer did wrong is logged in one line.
    private func serve(_ connection: Connection) async {
        let peer = connection.channel.remoteAddress.map { "\($0)" } ?? "unknown"
        let logger = logger.with(metadata: ["wyoming": "\(role.rawValue)", "peer": "\(peer)"])
        let count = connections.wrappingAdd(1, ordering: .relaxed).newValue
        defer { connections.wrappingSubtract(1, ordering: .relaxed) }
        guard count <= configuration.limits.maxClients else {
            logger.warning("wyoming connection refused: \(configuration.limits.maxClients) clients already connected")
            try? await connection.channel.close()
            return
        }
        logger.debug("wyoming client connected")
        do {
            // Shutdown cancels the session wherever it waits: for audio, for the client, or for
            // room in a full playback queue (which could otherwise take a minute to drain).
            try await cancelWhenGracefulShutdown { [self] in
                switch role {
                case .mic:
                    try await WyomingMicSession(hub: engine.captureHub, configuration: configuration, logger: logger)
                        .run(connection)
                case .snd:
                    let stream = takeStreamName()
                    defer { streamsInUse.withLock { _ = $0.remove(stream) } }
                    try await WyomingSndSession(
                        mixer: engine.mixer, configuration: configuration, stream: stream, logger: logger
                    ).run(connection)
                }
            }
            logger.debug("wyoming client disconnected")
        } catch let error as WyomingError {
            logger.warning("wyoming connection closed: \(error)")
        } catch let error as PlaybackError {
            logger.warning("wyoming connection refused: \(error.message)")
        } catch let error as APIError {
            logger.warning("wyoming connection refused: \(error.message)")
        } catch {
            logger.debug("wyoming connection ended", metadata: ["error": "\(error)"])
        }
        try? await connection.channel.close()
    }
}

extension WyomingService {
    /// The playback stream for a new snd connection: `--wyoming-snd-stream`, or while another
    /// connection holds it `NAME-2`, `NAME-3`...: two satellites answering at once are mixed, not
    /// interleaved chunk by chunk in one queue. A connection after another (a satellite reconnects
    /// per answer) takes the same stream, so its audio follows what is still playing.
    fileprivate func takeStreamName() -> String {
        let base = configuration.sndStream
        return streamsInUse.withLock { inUse in
            var name = base
            var number = 1
            while inUse.contains(name) {
                number += 1
                name = "\(base)-\(number)"
            }
            inUse.insert(name)
            return name
        }
    }
}

extension Logger {
    /// A copy with extra metadata.
    fileprivate func with(metadata: Logger.Metadata) -> Logger {
        var copy = self
        for (key, value) in metadata { copy[metadataKey: key] = value }
        return copy
    }
}
