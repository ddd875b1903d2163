/// The `info` answers to `describe`, shaped as the `wyoming` package's `Info` with one mic or snd program.
enum WyomingInfo {
    /// Every event type the `wyoming` package defines: such an event that a service has no use for
    /// is ignored, as the protocol asks of servers; any other type closes the connection.
    static let protocolEvents: Set<String> = [
        "audio-chunk", "audio-start", "audio-stop", "describe", "detect", "detection", "error", "handled",
        "handled-chunk", "handled-start", "handled-stop", "info", "intent", "intents-start", "intents-stop",
        "not-detected", "not-handled", "not-recognized", "pause-satellite", "ping", "played", "pong", "recognize",
        "run-pipeline", "run-satellite", "satellite-connected", "satellite-disconnected", "select-program",
        "streaming-started", "streaming-stopped", "synthesize", "synthesize-chunk", "synthesize-start",
        "synthesize-stop", "synthesize-stopped", "timer-cancelled", "timer-finished", "timer-started",
        "timer-updated", "transcribe", "transcript", "transcript-chunk", "transcript-start", "transcript-stop",
        "user-event", "voice-started", "voice-stopped",
    ]

    /// The answer of the mic service.
    static func mic(rate: Int, width: Int, channels: Int) -> WyomingEvent {
        info(
            kind: "mic", formatKey: "mic_format", name: "audiogate-mic",
            description: "Microphone shared by audiogate", rate: rate, width: width, channels: channels)
    }

    /// The answer of the snd service: the format it plays best (any rate, width and channels are accepted).
    static func snd(rate: Int, width: Int, channels: Int) -> WyomingEvent {
        info(
            kind: "snd", formatKey: "snd_format", name: "audiogate-snd",
            description: "Speaker shared by audiogate", rate: rate, width: width, channels: channels)
    }

    private static func info(
        kind: String, formatKey: String, name: String, description: String, rate: Int, width: Int, channels: Int
    ) -> WyomingEvent {
        let format: WyomingValue = [
            "rate": .number(Double(rate)), "width": .number(Double(width)), "channels": .number(Double(channels)),
        ]
        let program: WyomingValue = [
            "name": .string(name),
            // The project has no public home page to point to.
            "attribution": ["name": "audiogate", "url": ""],
            "installed": true,
            "description": .string(description),
            "version": .string(AudioGateVersion.current),
            formatKey: format,
        ]
        var data: [String: WyomingValue] = [:]
        for other in ["asr", "tts", "handle", "intent", "wake", "mic", "snd"] { data[other] = [] }
        data[kind] = [program]
        return WyomingEvent(type: WyomingEvent.Kind.info, data: data)
    }
}
