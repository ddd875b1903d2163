import AudioGateDevices
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import ServiceLifecycle

/// Composes the engine and the routes into a runnable Hummingbird application.
public struct AudioGateServer: Sendable {
    /// What the server was started with.
    public let configuration: ServerConfiguration
    /// The audio side.
    public let engine: AudioEngine
    /// The Prometheus registry behind `/metrics`.
    public let metrics: ServerMetrics
    /// Server-side recordings.
    public let recordings: RecordingService
    /// The Wyoming services that are switched on.
    public let wyoming: [WyomingService]
    /// Speech from `/v1/say` still being queued after its answer.
    public let speech: SpeechService
    /// The Snapcast client, when `--snapcast-server` is set.
    public let snapcast: SnapcastClient?
    let snapcastMetrics: SnapcastMetrics?
    /// The Sendspin player, when `--sendspin-server` is set.
    public let sendspin: SendspinClient?
    let sendspinMetrics: SendspinMetrics?
    let logger: Logger

    public init(configuration: ServerConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        metrics = ServerMetrics()
        engine = AudioEngine(configuration: configuration, metrics: metrics, logger: logger)
        recordings = RecordingService(
            configuration: configuration, hub: engine.captureHub, metrics: metrics, logger: logger)
        wyoming = Self.wyomingServices(configuration: configuration, engine: engine, logger: logger)
        speech = SpeechService()
        snapcast = Self.snapcastClient(configuration: configuration, engine: engine, logger: logger)
        snapcastMetrics = snapcast == nil ? nil : SnapcastMetrics(registry: metrics.registry)
        sendspin = Self.sendspinClient(configuration: configuration, engine: engine, speech: speech, logger: logger)
        sendspinMetrics = sendspin == nil ? nil : SendspinMetrics(registry: metrics.registry)
    }

    /// The router with every route and middleware.
    public func makeRouter() -> Router<AudioGateRequestContext> {
        let router = Router(context: AudioGateRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        router.add(middleware: SecurityMiddleware(policy: SecurityPolicy(configuration: configuration)))
        router.add(middleware: QueryCheckMiddleware())
        addInfoRoutes(to: router)
        addMetricsRoutes(to: router)
        addCaptureRoutes(to: router)
        addPlaybackRoutes(to: router)
        addSpeechRoutes(to: router)
        addRecordingRoutes(to: router)
        addSendspinRoutes(to: router)
        addDocsRoutes(to: router)
        addPageRoutes(to: router)
        return router
    }

    /// The application: HTTP routes, the WebSockets, and the device loops as services.
    public func makeApplication() -> some ApplicationProtocol {
        let router = makeRouter()
        let limits = configuration.limits
        let channelConfiguration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(
                idleTimeout: .seconds(Int64(limits.idleTimeoutSeconds)),
                httpDecoderConfiguration: .init(
                    maxHeaderFieldSize: limits.maxHeaderBytes, maxHeaderListSize: limits.maxHeaderBytes)),
            ws: .init(maxFrameSize: limits.maxWebSocketMessageBytes))
        let check = upgradeCheck()
        let webSocket = webSocketUpgrade(check: check)
        let connections = ConnectionLimit(limit: limits.maxConnections)
        return Application(
            router: router,
            server: HTTPServerBuilder { responder in
                AudioGateChannel(
                    upgrade: HTTP1WebSocketUpgradeChannel(
                        responder: responder, configuration: channelConfiguration, shouldUpgrade: webSocket),
                    check: check, connections: connections)
            },
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "audiogate"),
            // Shut down in reverse: recordings are finished while the capture device still runs.
            services: [engine.capture, engine.playback, recordings, speech] + wyoming.map { $0 as any Service }
                + (snapcast.map { [$0 as any Service] } ?? []) + (sendspin.map { [$0 as any Service] } ?? []),
            logger: logger)
    }

    /// The checks a request head must pass before its body is asked for (`Expect: 100-continue`)
    /// or before the upgrader sees it (see `UpgradeGuard`): the security policy, then the route's own
    /// query parameters and, for the WebSockets, capacity.
    func upgradeCheck() -> UpgradeGuard.Check {
        let policy = SecurityPolicy(configuration: configuration)
        let hub = engine.captureHub
        return { method, path, query, host, headers in
            let uri = URI("?" + (query ?? ""))
            if let refusal = policy.refusal(
                method: method, path: path, host: host, origin: headers[.origin], authorization: headers[.authorization],
                queryToken: uri.queryParameters.get("token"))
            {
                return refusal
            }
            let dictionary = uri.queryDictionary
            if let error = RouteTable.unknownParameter(path, method: method, keys: dictionary.keys) { return error }
            do {
                switch RouteTable.route(method, at: RoutePath.canonical(path)) {
                case RouteTable.capture:
                    _ = try CaptureParameters(query: dictionary)
                    try hub.checkCapacity()
                case RouteTable.playbackSocket, RouteTable.playback, RouteTable.say:
                    _ = try PlaybackParameters(query: dictionary)
                default:
                    break
                }
            } catch {
                return error
            }
            return nil
        }
    }
}
