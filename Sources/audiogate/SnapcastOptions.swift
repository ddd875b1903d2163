import ArgumentParser
import AudioGateServer

/// The `--snapcast-*` flags of `audiogate serve`: join a snapserver and play its music in sync.
struct SnapcastOptions: ParsableArguments {
    /// A `--snapcast-server` that does not parse.
    struct Invalid: Error {
        var message: String
    }

    @Option(help: "Join this snapserver (HOST[:PORT], port 1704 by default) and play its stream in sync (off by default). [env AUDIOGATE_SNAPCAST_SERVER]")
    var snapcastServer: String?

    @Option(help: "Name shown in the snapserver's client list (default: the host name). [env AUDIOGATE_SNAPCAST_NAME]")
    var snapcastName: String?

    @Option(help: "Client id the snapserver keeps this client's settings under (default: derived from /etc/machine-id). [env AUDIOGATE_SNAPCAST_ID]")
    var snapcastId: String?

    @Option(help: "Playback stream the music plays on. [env AUDIOGATE_SNAPCAST_STREAM]")
    var snapcastStream: String = Environment.string("snapcast-stream") ?? "snapcast"

    @Option(help: "Extra output latency in milliseconds, as snapclient's --latency. [env AUDIOGATE_SNAPCAST_LATENCY_MS]")
    var snapcastLatencyMs: Int = Environment.int("snapcast-latency-ms") ?? 0

    /// The flags, with `AUDIOGATE_*` variables for those left unset.
    var configuration: SnapcastConfiguration {
        get throws(Invalid) {
            var configuration = SnapcastConfiguration()
            if let text = snapcastServer ?? Environment.string("snapcast-server") {
                guard let (host, port) = SnapcastConfiguration.parseServer(text) else {
                    throw Invalid(message: "--snapcast-server must be HOST or HOST:PORT (port 1-65535), not '\(text)'")
                }
                configuration.host = host
                configuration.port = port
            }
            if let name = snapcastName ?? Environment.string("snapcast-name") { configuration.name = name }
            if let id = snapcastId ?? Environment.string("snapcast-id") { configuration.id = id }
            configuration.stream = snapcastStream
            configuration.latencyMilliseconds = snapcastLatencyMs
            return configuration
        }
    }
}
