import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore

/// `--sendspin-port`: waits for Sendspin servers to dial the player at `/sendspin` (how Music
/// Assistant adds the players it discovered) and runs each connection as the dialing player runs
/// its own; which server holds the player is settled at `server/hello` (`SendspinClient+Seat`).
/// Only the WebSocket at `/sendspin` is served, to a few connections at a time. Off loopback, the
/// player is published as `_sendspin._tcp` (TXT `path`, `name`) through Avahi while it waits.
struct SendspinListener {
    /// The path servers dial, as the specification recommends and the TXT record says.
    static let path = "/sendspin"
    /// Connections open at once: the holder and servers coming to take over or be turned away.
    static let maximumConnections = 4

    let client: SendspinClient
    let identity: SendspinIdentity
    let address: SendspinConfiguration.ListenAddress

    /// Serves until graceful shutdown; a port that cannot be bound ends the server, as the API's would.
    func run() async throws {
        let host = address.host ?? "127.0.0.1"
        let client = client
        let identity = identity
        let logger = client.logger
        let check: UpgradeGuard.Check = { method, path, _, _, _ in
            method == .get && RoutePath.canonical(path) == Self.path
                ? nil : APIError(.notFound, "only the Sendspin WebSocket is served here, at \(Self.path)")
        }
        let upgrade: AudioGateServer.WebSocketUpgrade = { head, channel, _ in
            guard check(.get, UpgradeGuard.split(head.path ?? "/").path, nil, nil, head.headerFields) == nil else {
                return .dontUpgrade
            }
            let peer = channel.remoteAddress.map(Self.describe) ?? "a server"
            client.countConnection()
            return .upgrade([:]) { inbound, outbound, _ in
                await PlayerConnectionLoop<SendspinErrorCode>(player: "sendspin", server: peer, logger: logger).once(
                    { try await SendspinConnection(client: client, identity: identity, peer: peer).run(inbound: inbound, outbound: outbound) },
                    ended: { client.record($0) })
            }
        }
        let router = Router(context: AudioGateRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        let connections = ConnectionLimit(limit: Self.maximumConnections)
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(
            ws: .init(maxFrameSize: NoiseHandshake.maximumMessageBytes + 1, autoPing: .enabled(timePeriod: .seconds(10))))
        let application = Application(
            router: router,
            server: HTTPServerBuilder { responder in
                AudioGateChannel(
                    upgrade: HTTP1WebSocketUpgradeChannel(responder: responder, configuration: configuration, shouldUpgrade: upgrade),
                    check: check, connections: connections)
            },
            configuration: .init(address: .hostname(host, port: address.port), serverName: "audiogate"),
            onServerRunning: { _ in
                logger.info("sendspin player waiting for servers at ws://\(SendspinConfiguration.ListenAddress(host: host, port: address.port))\(Self.path)",
                    metadata: ["name": "\(client.configuration.name)", "id": "\(identity.clientID)"])
            },
            logger: logger)
        let publisher = advertise(host: host, logger: logger)
        // Withdrawn when the listener stops: freeing the publisher removes the service.
        defer { withExtendedLifetime(publisher) {} }
        try await application.run()
    }

    /// Publishes the player through the Avahi daemon; nil (and one log line) when it listens on
    /// loopback only, where no other host could dial it, or when Avahi cannot be used.
    private func advertise(host: String, logger: Logger) -> AvahiPublisher? {
        guard !ServerConfiguration.isLoopback(host) else {
            logger.info("sendspin player not advertised: it listens on \(host), which other hosts cannot reach")
            return nil
        }
        let name = client.configuration.name
        let service = AvahiPublisher.Service(
            name: name, type: "_sendspin._tcp", port: UInt16(address.port), txt: ["path=\(Self.path)", "name=\(name)"])
        let client = client
        do {
            return try AvahiPublisher(service: service, logger: logger) { state in
                client.state.withLock {
                    if case .published = state { $0.advertised = true } else { $0.advertised = false }
                }
                switch state {
                case .waitingForDaemon:
                    logger.info("sendspin player not advertised yet: no Avahi daemon is running (it is published once one starts)")
                case .registering:
                    logger.debug("sendspin player: publishing _sendspin._tcp")
                case .published(let name):
                    logger.info("sendspin player advertised as _sendspin._tcp '\(name)' on port \(service.port)")
                case .failed(let reason):
                    logger.warning("sendspin player not advertised: \(reason)")
                }
            }
        } catch {
            logger.warning("sendspin player not advertised: \(error)")
            return nil
        }
    }

    /// `ws://ADDRESS:PORT` of a peer, for the log and `/v1/status`.
    static func describe(_ address: SocketAddress) -> String {
        guard let ip = address.ipAddress, let port = address.port else { return "\(address)" }
        return "ws://" + SendspinConfiguration.ListenAddress(host: ip, port: port).description
    }
}
