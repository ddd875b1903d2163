import AudioGateDevices
import Foundation

/// Everything `audiogate serve` can be told; defaults are the documented ones.
public struct ServerConfiguration: Sendable {
    /// Address to bind; loopback unless the user says otherwise.
    public var host = "127.0.0.1"
    /// TCP port.
    public var port = 8750
    /// Capture PCM name (`auto`, `loopback` or an ALSA name).
    public var captureDevice = "auto"
    /// Playback PCM name (`auto`, `loopback` or an ALSA name).
    public var playbackDevice = "auto"
    /// Bearer token required on every route not declared public, when set.
    public var token: String?
    /// Serve a non-loopback `host` without a token (a trusted network's explicit choice).
    public var insecureNoToken = false
    /// Extra origins allowed to call the API from a browser.
    public var allowedOrigins: [String] = []
    /// Extra Host header values accepted besides loopback names.
    public var allowedHosts: [String] = []
    /// Device period in milliseconds.
    public var periodMilliseconds = 10
    /// Device buffer in milliseconds.
    public var bufferMilliseconds = 40
    /// A device nobody has used for this long is stopped until it is needed again (0: never).
    public var deviceIdleMilliseconds = 5000
    /// speexdsp resampler quality for client rates.
    public var resamplerQuality: Resampler.Quality = .fastest
    /// How far music streams are lowered while a voice stream is audible, in dB (0: never).
    public var duckDecibels = 15.0
    /// Bounds on what clients may hold.
    public var limits = Limits()
    /// Where server-side recordings are kept.
    public var dataDirectory = ServerConfiguration.defaultDataDirectory
    /// Finished recordings older than this many hours are removed (0 keeps them).
    public var retentionHours = 24.0
    /// Most megabytes recordings may take on disk; the oldest finished ones go first (0: no cap).
    public var maxDiskMegabytes = 0
    /// The Wyoming mic and snd services (off by default).
    public var wyoming = WyomingConfiguration()
    /// The Snapcast client (off by default).
    public var snapcast = SnapcastConfiguration()
    /// The Sendspin player (off by default).
    public var sendspin = SendspinConfiguration()

    public init() {}

    /// Bounds that keep one client from hurting the others.
    public struct Limits: Sendable, Codable, Equatable {
        /// Most concurrent capture subscribers (WebSocket and HTTP).
        public var maxCaptureClients = 256
        /// Audio a capture client may fall behind before its oldest audio is dropped.
        public var captureQueueMilliseconds = 1000
        /// Most concurrent playback streams.
        public var maxPlaybackStreams = 32
        /// Audio one playback stream may hold queued.
        public var playbackQueueSeconds = 60
        /// Largest WebSocket message accepted.
        public var maxWebSocketMessageBytes = 1 << 20
        /// Largest request header block (one field or all fields together).
        public var maxHeaderBytes = 16 << 10
        /// Seconds a connection may sit idle (or trickle a request) before it is closed.
        public var idleTimeoutSeconds = 60
        /// Most recordings running at once.
        public var maxRecordings = 16
        /// Most marks waiting to be heard on one playback stream (every producer's together).
        public var maxPendingMarks = 256
        /// Most seconds of speech one `/v1/say` text may produce; synthesis stops there.
        public var maxSaySeconds = 120
        /// Most decoder threads (compressed uploads and WebSocket files) at once, server-wide.
        public var maxDecoders = 16
        /// Largest upload body (`POST /v1/playback`), in megabytes.
        public var maxBodyMegabytes = 256
        /// Most open connections, counted when accepted; well under a service's usual 1024 files,
        /// so the sound card and recording files can always be opened.
        public var maxConnections = 512

        public init() {}

        /// `maxBodyMegabytes` in bytes.
        public var maxBodyBytes: Int { maxBodyMegabytes << 20 }

        enum CodingKeys: String, CodingKey {
            case maxCaptureClients = "max_capture_clients"
            case captureQueueMilliseconds = "capture_queue_ms"
            case maxPlaybackStreams = "max_playback_streams"
            case playbackQueueSeconds = "playback_queue_seconds"
            case maxWebSocketMessageBytes = "max_websocket_message_bytes"
            case maxHeaderBytes = "max_header_bytes"
            case idleTimeoutSeconds = "idle_timeout_seconds"
            case maxRecordings = "max_recordings"
            case maxPendingMarks = "max_pending_marks"
            case maxSaySeconds = "max_say_seconds"
            case maxDecoders = "max_decoders"
            case maxBodyMegabytes = "max_body_mb"
            case maxConnections = "max_connections"
        }
    }

    /// Capture device parameters.
    public var captureRequest: PCMRequest {
        PCMRequest(preferredChannels: 1, periodMilliseconds: periodMilliseconds, bufferMilliseconds: bufferMilliseconds)
    }

    /// Playback device parameters.
    public var playbackRequest: PCMRequest {
        PCMRequest(preferredChannels: 2, periodMilliseconds: periodMilliseconds, bufferMilliseconds: bufferMilliseconds)
    }
}

extension ServerConfiguration {
    /// Loopback names and addresses.
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Why the server must not start as configured on the network, or nil: a non-loopback `host`
    /// needs a token unless `insecureNoToken` says the network is trusted.
    public var exposureProblem: String? {
        guard !Self.isLoopback(host), token == nil, !insecureNoToken else { return nil }
        return "--host \(host) without a token would let anyone who reaches this port hear the microphone: "
            + "pass --token-file FILE (or AUDIOGATE_TOKEN_FILE), or --insecure-no-token on a trusted network"
    }

    /// `name` inside the data folder `directory` (given with or without its trailing slash).
    static func path(_ name: String, in directory: String) -> String {
        (directory.hasSuffix("/") ? String(directory.dropLast()) : directory) + "/" + name
    }

    /// `$XDG_STATE_HOME/audiogate`, else `~/.local/state/audiogate`, else `/var/lib/audiogate`.
    public static var defaultDataDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/audiogate" }
        if let home = environment["HOME"], home.hasPrefix("/"), home != "/" { return home + "/.local/state/audiogate" }
        return "/var/lib/audiogate"
    }
}
