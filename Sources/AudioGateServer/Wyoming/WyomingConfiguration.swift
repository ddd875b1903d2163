import AudioGateCore

/// The Wyoming mic and snd services (`--wyoming-*`); both are off unless given a port.
public struct WyomingConfiguration: Sendable, Equatable {
    /// TCP port of the mic service (nil: off; 0: any free port).
    public var micPort: Int?
    /// TCP port of the snd service (nil: off; 0: any free port).
    public var sndPort: Int?
    /// Sample rate of the mic audio.
    public var micRate = 16000
    /// Bytes per sample of the mic audio (1: unsigned 8-bit, 2: 16-bit, 3: packed 24-bit, 4: 32-bit).
    public var micWidth = 2
    /// Channels of the mic audio.
    public var micChannels = 1
    /// Frames per `audio-chunk`, as the reference services chunk.
    public var samplesPerChunk = 1024
    /// Capture processing of the mic audio (echo cancellation, noise suppression, gain).
    public var micProcessing = VoiceProcessing()
    /// The playback stream snd audio is mixed in as (concurrent connections get `NAME-2`, `NAME-3`...).
    public var sndStream = "wyoming"
    /// Allow the services on a non-loopback `--host` (Wyoming has no authentication).
    public var allowRemote = false
    /// Bounds on what a peer may send.
    public var limits = WyomingLimits()

    /// Both services off.
    public init() {}

    /// Whether any service is on.
    public var isEnabled: Bool { micPort != nil || sndPort != nil }

    /// The sample format of a Wyoming `width`.
    public static func sampleFormat(width: Int) -> SampleFormat? {
        switch width {
        case 1: .u8
        case 2: .s16le
        case 3: .s24le3
        case 4: .s32le
        default: nil
        }
    }

    /// The mic audio format.
    public var micFormat: AudioFormat {
        AudioFormat(rate: micRate, channels: micChannels, sampleFormat: Self.sampleFormat(width: micWidth) ?? .s16le)
    }

    /// Why the settings cannot work with `host`, or nil when they can.
    public func problem(host: String) -> String? {
        guard isEnabled else { return nil }
        for (name, port) in [("--wyoming-mic-port", micPort), ("--wyoming-snd-port", sndPort)] {
            if let port, !(0...65535).contains(port) { return "\(name) must be 1-65535 (0: any free port)" }
        }
        if let mic = micPort, let snd = sndPort, mic == snd, mic != 0 {
            return "--wyoming-mic-port and --wyoming-snd-port must differ"
        }
        guard ClientFormats.captureRates.contains(micRate) else {
            return "--wyoming-mic-rate must be one of \(ClientFormats.captureRates.map(String.init).joined(separator: ", "))"
        }
        guard Self.sampleFormat(width: micWidth) != nil else { return "--wyoming-mic-width must be 1, 2, 3 or 4" }
        guard ClientFormats.channels.contains(micChannels) else { return "--wyoming-mic-channels must be 1 or 2" }
        if micProcessing.isEnabled, micChannels != 1 || !VoiceProcessing.rates.contains(micRate) {
            let rates = VoiceProcessing.rates.sorted().map(String.init).joined(separator: ", ")
            return "mic processing runs on mono audio at \(rates) Hz"
        }
        do throws(PlaybackError) {
            // Room for the `-N` suffix of concurrent connections.
            _ = try PlaybackParameters.validatedStreamName(sndStream + "-99")
        } catch {
            return "--wyoming-snd-stream must be 1-61 characters of A-Z, a-z, 0-9, '.', '_' and '-'"
        }
        if !allowRemote, !ServerConfiguration.isLoopback(host) {
            return "the Wyoming services have no authentication: on --host \(host) they need --wyoming-allow-remote"
        }
        return nil
    }
}
