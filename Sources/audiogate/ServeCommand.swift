import ArgumentParser
import AudioGateDevices
import AudioGateServer
import Hummingbird
import Logging

/// `audiogate serve`: opens the devices and serves the API until SIGTERM or SIGINT.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Open the sound card and serve the HTTP/WebSocket API (the default command).")

    @Option(help: "Address to bind. Anything but loopback exposes the microphone to the network: set --token. [env AUDIOGATE_HOST]")
    var host: String = Environment.string("host") ?? "127.0.0.1"

    @Option(help: "TCP port. [env AUDIOGATE_PORT]")
    var port: Int = Environment.int("port") ?? 8750

    @Option(help: "Device for both directions: 'auto' (ALSA default, else the built-in loopback), 'loopback', or an ALSA PCM name such as 'default', 'pulse', 'hw:CARD=Device,DEV=0', 'plughw:1,0'. [env AUDIOGATE_DEVICE]")
    var device: String = Environment.string("device") ?? "auto"

    @Option(help: "Capture device; overrides --device for the microphone. [env AUDIOGATE_CAPTURE_DEVICE]")
    var captureDevice: String?

    @Option(help: "Playback device; overrides --device for the speaker. [env AUDIOGATE_PLAYBACK_DEVICE]")
    var playbackDevice: String?

    @Option(help: "Require 'Authorization: Bearer TOKEN' (or ?token= on WebSockets) on every route but /, /healthz, /openapi.yaml and /v1/audiogate.js. On the command line it shows in ps: prefer --token-file. [env AUDIOGATE_TOKEN]")
    var token: String?

    @Option(help: "Read the token from this file (its first line; keep the file mode 0600), e.g. a container secret or systemd's $CREDENTIALS_DIRECTORY/token. [env AUDIOGATE_TOKEN_FILE]")
    var tokenFile: String?

    @Flag(help: "Serve a non-loopback --host without a token. Only on a network where everyone who can reach the port may hear the microphone. [env AUDIOGATE_INSECURE_NO_TOKEN=true]")
    var insecureNoToken = false

    @Option(help: "Allow browser pages from this origin (e.g. https://app.example); repeatable. [env AUDIOGATE_ALLOW_ORIGIN, comma-separated]")
    var allowOrigin: [String] = Environment.list("allow-origin")

    @Option(help: "Accept this Host header besides loopback names (e.g. a LAN name); repeatable. [env AUDIOGATE_ALLOW_HOST, comma-separated]")
    var allowHost: [String] = Environment.list("allow-host")

    @Option(help: "Device period in milliseconds (latency vs. wake-ups). [env AUDIOGATE_PERIOD_MS]")
    var periodMs: Int = Environment.int("period-ms") ?? 10

    @Option(help: "Device buffer in milliseconds (at least 2 periods; larger survives CPU hiccups). [env AUDIOGATE_BUFFER_MS]")
    var bufferMs: Int = Environment.int("buffer-ms") ?? 40

    @Option(help: "Stop a device nobody has used for this many milliseconds until it is needed again, as PulseAudio suspends an idle sink; 0 keeps both devices running. [env AUDIOGATE_DEVICE_IDLE_MS]")
    var deviceIdleMs: Int = Environment.int("device-idle-ms") ?? 5000

    @Option(help: "Resampler quality: fastest (a built-in polyphase filter for whole-number ratios, speexdsp quality 5 otherwise), medium or best (speexdsp 7 or 10). [env AUDIOGATE_RESAMPLER]")
    var resampler: String = Environment.string("resampler") ?? "fastest"

    @Option(help: "Most capture clients at once (WebSocket and HTTP); more get 429. [env AUDIOGATE_MAX_CAPTURE_CLIENTS]")
    var maxCaptureClients: Int = Environment.int("max-capture-clients") ?? 256

    @Option(help: "Audio a capture client may fall behind, in ms, before its oldest audio is dropped. [env AUDIOGATE_CAPTURE_QUEUE_MS]")
    var captureQueueMs: Int = Environment.int("capture-queue-ms") ?? 1000

    @Option(help: "Most playback streams at once; more get 429. [env AUDIOGATE_MAX_PLAYBACK_STREAMS]")
    var maxPlaybackStreams: Int = Environment.int("max-playback-streams") ?? 32

    @Option(help: "Audio one playback stream may hold queued, in seconds; beyond it the server stops reading that client. [env AUDIOGATE_PLAYBACK_QUEUE_SECONDS]")
    var playbackQueueSeconds: Int = Environment.int("playback-queue-seconds") ?? 60

    @Option(help: "Largest WebSocket message in bytes; larger ones close the socket with 1009. [env AUDIOGATE_MAX_MESSAGE_BYTES]")
    var maxMessageBytes: Int = Environment.int("max-message-bytes") ?? (1 << 20)

    @Option(help: "Largest request header block in bytes. [env AUDIOGATE_MAX_HEADER_BYTES]")
    var maxHeaderBytes: Int = Environment.int("max-header-bytes") ?? (16 << 10)

    @Option(help: "Seconds a connection may idle or trickle a request body before it is closed. [env AUDIOGATE_IDLE_TIMEOUT]")
    var idleTimeout: Int = Environment.int("idle-timeout") ?? 60

    @Option(help: "Directory for server-side recordings (default $XDG_STATE_HOME/audiogate or ~/.local/state/audiogate). [env AUDIOGATE_DATA_DIR]")
    var dataDir: String = Environment.string("data-dir") ?? ServerConfiguration.defaultDataDirectory

    @Option(help: "Remove finished recordings this many hours after they ended; 0 keeps them. [env AUDIOGATE_RETENTION_HOURS]")
    var retentionHours: Double = Environment.double("retention-hours") ?? 24

    @Option(help: "Most megabytes recordings may take; the oldest finished ones are removed first, then a recording fails. 0: no cap. [env AUDIOGATE_MAX_DISK_MB]")
    var maxDiskMb: Int = Environment.int("max-disk-mb") ?? 0

    @Option(help: "Most recordings running at once; more get 429. [env AUDIOGATE_MAX_RECORDINGS]")
    var maxRecordings: Int = Environment.int("max-recordings") ?? 16

    @Option(help: "Lower music streams (role=music, the Snapcast and Sendspin streams) by this many dB while a voice stream plays; 0 never lowers them. [env AUDIOGATE_DUCK_DB]")
    var duckDb: Double = Environment.double("duck-db") ?? 15

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical. [env AUDIOGATE_LOG_LEVEL]")
    var logLevel: String = Environment.string("log-level") ?? "info"

    @OptionGroup(title: "Limits (each reached limit is a JSON error; the server goes on serving the others)")
    var limits: LimitOptions

    @OptionGroup(title: "Wyoming (Home Assistant voice satellites)")
    var wyoming: WyomingOptions

    @OptionGroup(title: "Snapcast (music in sync with a snapserver)")
    var snapcast: SnapcastOptions

    @OptionGroup(title: "Sendspin (a player of a Sendspin server, such as Music Assistant)")
    var sendspin: SendspinOptions

    func validate() throws {
        guard (1...65535).contains(port) else { throw ValidationError("--port must be 1-65535") }
        guard (1...100).contains(periodMs) else { throw ValidationError("--period-ms must be 1-100") }
        guard bufferMs >= 2 * periodMs, bufferMs <= 2000 else {
            throw ValidationError("--buffer-ms must be at least 2 periods and at most 2000")
        }
        guard (0...3_600_000).contains(deviceIdleMs) else {
            throw ValidationError("--device-idle-ms must be 0 (never stop) to 3600000")
        }
        guard Resampler.Quality(rawValue: resampler) != nil else {
            throw ValidationError("--resampler must be fastest, medium or best")
        }
        guard (1...100_000).contains(maxCaptureClients), (20...60_000).contains(captureQueueMs),
            (1...1024).contains(maxPlaybackStreams), (1...3600).contains(playbackQueueSeconds),
            (1024...(64 << 20)).contains(maxMessageBytes), (1024...(1 << 20)).contains(maxHeaderBytes),
            (1...86_400).contains(idleTimeout), (1...1024).contains(maxRecordings)
        else {
            throw ValidationError("a limit is out of range: see --help for each limit's meaning")
        }
        guard retentionHours.isFinite, retentionHours >= 0 else { throw ValidationError("--retention-hours must be 0 or more") }
        guard maxDiskMb >= 0 else { throw ValidationError("--max-disk-mb must be 0 (no cap) or more") }
        guard !dataDir.isEmpty else { throw ValidationError("--data-dir must name a directory") }
        guard duckDb.isFinite, (0...60).contains(duckDb) else { throw ValidationError("--duck-db must be 0-60") }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be trace, debug, info, notice, warning, error or critical")
        }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "audiogate")

        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        // Optional flags read their variables here: a flag without a value has no default to carry one.
        configuration.captureDevice = captureDevice ?? Environment.string("capture-device") ?? device
        configuration.playbackDevice = playbackDevice ?? Environment.string("playback-device") ?? device
        do {
            configuration.token = try TokenSource(flag: token, file: tokenFile).token
        } catch {
            logger.critical("\(error.message)")
            throw ExitCode(2)
        }
        configuration.insecureNoToken = insecureNoToken || Environment.bool("insecure-no-token")
        if let problem = configuration.exposureProblem {
            logger.critical("\(problem)")
            throw ExitCode(2)
        }
        configuration.allowedOrigins = allowOrigin
        configuration.allowedHosts = allowHost
        configuration.periodMilliseconds = periodMs
        configuration.bufferMilliseconds = bufferMs
        configuration.deviceIdleMilliseconds = deviceIdleMs
        configuration.resamplerQuality = Resampler.Quality(rawValue: resampler) ?? .fastest
        configuration.duckDecibels = duckDb
        configuration.limits.maxCaptureClients = maxCaptureClients
        configuration.limits.captureQueueMilliseconds = captureQueueMs
        configuration.limits.maxPlaybackStreams = maxPlaybackStreams
        configuration.limits.playbackQueueSeconds = playbackQueueSeconds
        configuration.limits.maxWebSocketMessageBytes = maxMessageBytes
        configuration.limits.maxHeaderBytes = maxHeaderBytes
        configuration.limits.idleTimeoutSeconds = idleTimeout
        configuration.limits.maxRecordings = maxRecordings
        limits.apply(to: &configuration.limits)
        configuration.dataDirectory = dataDir
        configuration.retentionHours = retentionHours
        configuration.maxDiskMegabytes = maxDiskMb

        for name in Set([configuration.captureDevice, configuration.playbackDevice]) where !DeviceList.isKnown(name) {
            // A typo never starts working; a known device that is absent now (unplugged, its sound
            // server not started yet) is waited for by the device loops instead.
            let known = DeviceList.all().map(\.name).joined(separator: ", ")
            logger.critical("unknown device '\(name)': ALSA defines no such PCM. Known devices ('audiogate devices'): \(known)")
            throw ExitCode(2)
        }
        if configuration.insecureNoToken, !ServerConfiguration.isLoopback(host), configuration.token == nil {
            logger.warning("listening on \(host) without a token (--insecure-no-token): anyone who can reach this port can use the microphone")
        }
        configuration.wyoming = wyoming.configuration
        if let problem = configuration.wyoming.problem(host: host) {
            logger.critical("\(problem)")
            throw ExitCode(2)
        }
        do {
            configuration.snapcast = try snapcast.configuration
        } catch {
            logger.critical("\(error.message)")
            throw ExitCode(2)
        }
        if let problem = configuration.snapcast.problem() {
            logger.critical("\(problem)")
            throw ExitCode(2)
        }
        do {
            configuration.sendspin = try sendspin.configuration
        } catch {
            logger.critical("\(error.message)")
            throw ExitCode(2)
        }
        if let problem = configuration.sendspin.problem() {
            logger.critical("\(problem)")
            throw ExitCode(2)
        }
        let server = AudioGateServer(configuration: configuration, logger: logger)
        try await server.makeApplication().runService()
    }
}
