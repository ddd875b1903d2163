import AudioGateCore
import AudioGateDevices
import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Plays a snapserver's stream in sync with its other clients: joins it as a client, keeps the
/// offset to its clock, decodes its chunks and hands each to a timed `music` stream stamped with
/// the moment it must leave the loudspeaker. Reconnects with back-off until graceful shutdown.
public final class SnapcastClient: Service, Sendable {
    typealias Connection = NIOAsyncChannel<SnapcastMessage, SnapcastRequest>

    let configuration: SnapcastConfiguration
    let mixer: PlaybackMixer
    let logger: Logger
    /// The offset to the server's clock.
    public let clock = SnapcastClock()
    let state = Mutex(State())

    /// What the connection task knows, for `/v1/status`.
    struct State {
        var connected = false
        var settings: SnapcastServerSettings?
        var codec: String?
        var format: AudioFormat?
        var stream: PlaybackStream?
        var connections = 0
        var lastError: String?
        /// The current connection handed a chunk to the stream.
        var played = false
    }

    public init(configuration: SnapcastConfiguration, mixer: PlaybackMixer, logger: Logger) {
        self.configuration = configuration
        self.mixer = mixer
        self.logger = logger
    }

    /// `HOST:PORT` of the server.
    public var server: String {
        let host = configuration.host ?? ""
        return (host.contains(":") ? "[\(host)]" : host) + ":\(configuration.port)"
    }

    public func run() async throws {
        logger.info("snapcast client joining \(server)", metadata: ["name": "\(configuration.name)", "id": "\(configuration.id)"])
        await PlayerConnectionLoop<SnapcastErrorCode>(player: "snapcast", server: server, logger: logger).run(
            connection: { [self] in try await connectOnce() },
            played: { [self] in state.withLock { $0.played } },
            ended: { [self] in record($0) })
        logger.info("snapcast client stopped")
    }

    /// One connection, start to end.
    private func connectOnce() async throws {
        state.withLock { $0.played = false }
        let connection = try await connect()
        state.withLock { $0.connections += 1 }
        clock.reset()
        defer { closeStream() }
        try await connection.executeThenClose { inbound, outbound in
            try await outbound.write(.hello(id: 0, json: helloJSON()))
            var session = SnapcastSession(client: self)
            var played = false
            for try await message in inbound {
                try await session.handle(message)
                if session.played, !played {
                    played = true
                    state.withLock { $0.played = true }
                }
            }
        }
    }

    private func connect() async throws -> Connection {
        try await Self.connect(host: configuration.host ?? "", port: configuration.port, clock: clock)
    }

    /// A connection to a snapserver's stream port, framed, with the Time exchange on its event loop.
    static func connect(host: String, port: Int, clock: SnapcastClock) async throws -> Connection {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(2))
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(ByteToMessageHandler(SnapcastFrameDecoder()))
                    try sync.addHandler(MessageToByteHandler(SnapcastFrameEncoder()))
                    try sync.addHandler(SnapcastTimeHandler(clock: clock))
                    return try Connection(wrappingChannelSynchronously: channel)
                }
            }
    }

    /// The Hello snapclient sends, naming this client "audiogate".
    func helloJSON() -> [UInt8] { Self.hello(name: configuration.name, id: configuration.id) }

    /// A Hello object with every field snapserver 0.26 reads (it aborts on a missing one).
    static func hello(name: String, id: String) -> [UInt8] {
        var uts = utsname()
        _ = uname(&uts)
        let arch = withUnsafeBytes(of: &uts.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let hello: [String: SnapcastHelloValue] = [
            "Arch": .string(arch), "ClientName": .string("audiogate"), "HostName": .string(name),
            "ID": .string(id), "Instance": .int(1), "MAC": .string("00:00:00:00:00:00"), "OS": .string("Linux"),
            "SnapStreamProtocolVersion": .int(2), "Version": .string(AudioGateVersion.current),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Array((try? encoder.encode(hello)) ?? Data())
    }

    private func record(_ error: String) {
        state.withLock {
            $0.connected = false
            $0.lastError = error
        }
    }

    /// Silences and gives back the stream: without the server its queued audio has no clock.
    private func closeStream() {
        let stream = state.withLock { state -> PlaybackStream? in
            defer { state.stream = nil }
            state.connected = false
            return state.stream
        }
        if let stream { mixer.release(stream) }
    }
}

/// A value of the Hello object.
enum SnapcastHelloValue: Encodable {
    case string(String)
    case int(Int)

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        }
    }
}

extension SnapcastClient {
    /// The client's state for `/v1/status`.
    var status: PlayerStatus<SnapcastStatus> {
        let state = state.withLock { $0 }
        let measured = clock.count > 0
        let player = SnapcastStatus(
            clockJitterMs: measured ? Double(clock.jitterMicroseconds) / 1000 : nil,
            bufferMs: state.settings?.bufferMs, codec: state.codec, rate: state.format?.rate,
            channels: state.format?.channels, volume: state.settings?.volume, muted: state.settings?.muted)
        return PlayerStatus(
            connected: state.connected, server: server, clockOffsetMs: measured ? Double(clock.diffMicroseconds) / 1000 : nil,
            player: player, playout: TimedPlayoutStatus(state.stream?.timing), connections: state.connections,
            lastError: state.lastError)
    }

    /// The settings for `/v1/info`.
    var info: SnapcastInfo {
        SnapcastInfo(
            server: server, name: configuration.name, id: configuration.id, stream: configuration.stream,
            latencyMs: configuration.latencyMilliseconds)
    }
}
