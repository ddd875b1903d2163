import Logging

extension AudioGateServer {
    /// A service per configured Wyoming port, bound to the server's host.
    static func wyomingServices(configuration: ServerConfiguration, engine: AudioEngine, logger: Logger) -> [WyomingService] {
        let wyoming = configuration.wyoming
        var services: [WyomingService] = []
        if let port = wyoming.micPort {
            services.append(
                WyomingService(
                    role: .mic, host: configuration.host, port: port, configuration: wyoming, engine: engine,
                    logger: logger))
        }
        if let port = wyoming.sndPort {
            services.append(
                WyomingService(
                    role: .snd, host: configuration.host, port: port, configuration: wyoming, engine: engine,
                    logger: logger))
        }
        return services
    }
}
