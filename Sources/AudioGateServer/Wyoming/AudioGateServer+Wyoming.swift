import Logging
import NIOCore

extension AudioGateServer {
    /// A service per configured Wyoming port, bound to the server's host.
    static func wyomingServices(configuration: ServerConfiguration, engine: AudioEngine, logger: Logger) -> [WyomingService] {
        let wyoming = configuration.wyoming
        // The HTTP side's idle timeout also bounds an event left half sent.
        let idleTimeout = TimeAmount.seconds(Int64(configuration.limits.idleTimeoutSeconds))
        var services: [WyomingService] = []
        if let port = wyoming.micPort {
            services.append(
                WyomingService(
                    role: .mic, host: configuration.host, port: port, configuration: wyoming, idleTimeout: idleTimeout,
                    engine: engine, logger: logger))
        }
        if let port = wyoming.sndPort {
            services.append(
                WyomingService(
                    role: .snd, host: configuration.host, port: port, configuration: wyoming, idleTimeout: idleTimeout,
                    engine: engine, logger: logger))
        }
        return services
    }
}
