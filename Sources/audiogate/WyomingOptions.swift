import ArgumentParser
import AudioGateCore
import AudioGateServer
import Foundation

/// The `--wyoming-*` flags of `audiogate serve`: Wyoming mic and snd services for Home Assistant satellites.
struct WyomingOptions: ParsableArguments {
    @Option(help: "Serve the microphone as a Wyoming mic service on this TCP port (off by default). [env AUDIOGATE_WYOMING_MIC_PORT]")
    var wyomingMicPort: Int?

    @Option(help: "Serve the speaker as a Wyoming snd service on this TCP port (off by default). [env AUDIOGATE_WYOMING_SND_PORT]")
    var wyomingSndPort: Int?

    @Option(help: "Sample rate of the Wyoming mic audio. [env AUDIOGATE_WYOMING_MIC_RATE]")
    var wyomingMicRate: Int = Environment.int("wyoming-mic-rate") ?? 16000

    @Option(help: "Bytes per sample of the Wyoming mic audio: 1, 2, 3 or 4. [env AUDIOGATE_WYOMING_MIC_WIDTH]")
    var wyomingMicWidth: Int = Environment.int("wyoming-mic-width") ?? 2

    @Option(help: "Channels of the Wyoming mic audio: 1 or 2. [env AUDIOGATE_WYOMING_MIC_CHANNELS]")
    var wyomingMicChannels: Int = Environment.int("wyoming-mic-channels") ?? 1

    @Flag(help: "Cancel the echo of what audiogate plays in the Wyoming mic audio. [env AUDIOGATE_WYOMING_MIC_AEC=true]")
    var wyomingMicAec = false

    @Flag(help: "Suppress stationary noise in the Wyoming mic audio. [env AUDIOGATE_WYOMING_MIC_NS=true]")
    var wyomingMicNs = false

    @Flag(help: "Automatic gain on the Wyoming mic audio. [env AUDIOGATE_WYOMING_MIC_AGC=true]")
    var wyomingMicAgc = false

    @Option(help: "Playback stream the Wyoming snd audio is mixed in as. [env AUDIOGATE_WYOMING_SND_STREAM]")
    var wyomingSndStream: String = Environment.string("wyoming-snd-stream") ?? "wyoming"

    @Flag(help: "Serve Wyoming on a non-loopback --host. Wyoming has no authentication: anyone who can reach the ports hears the microphone and plays on the speaker. [env AUDIOGATE_WYOMING_ALLOW_REMOTE=true]")
    var wyomingAllowRemote = false

    /// The flags, with `AUDIOGATE_*` variables for those left unset.
    var configuration: WyomingConfiguration {
        var configuration = WyomingConfiguration()
        configuration.micPort = wyomingMicPort ?? Environment.int("wyoming-mic-port")
        configuration.sndPort = wyomingSndPort ?? Environment.int("wyoming-snd-port")
        configuration.micRate = wyomingMicRate
        configuration.micWidth = wyomingMicWidth
        configuration.micChannels = wyomingMicChannels
        configuration.micProcessing = VoiceProcessing(
            aec: wyomingMicAec || Environment.bool("wyoming-mic-aec"), ns: wyomingMicNs || Environment.bool("wyoming-mic-ns"),
            agc: wyomingMicAgc || Environment.bool("wyoming-mic-agc"))
        configuration.sndStream = wyomingSndStream
        configuration.allowRemote = wyomingAllowRemote || Environment.bool("wyoming-allow-remote")
        return configuration
    }
}
