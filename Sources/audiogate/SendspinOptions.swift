import ArgumentParser
import AudioGateServer

/// The `--sendspin-*` flags of `audiogate serve`: join a Sendspin server as a player in sync.
struct SendspinOptions: ParsableArguments {
    /// A value that does not parse.
    struct Invalid: Error {
        var message: String
    }

    @Option(help: "Join this Sendspin server as a player (ws://HOST:PORT/sendspin) and play its music in sync (off by default). [env AUDIOGATE_SENDSPIN_SERVER]")
    var sendspinServer: String?

    @Option(help: "Wait for Sendspin servers (Music Assistant) to dial this player at ws://HOST:PORT/sendspin: PORT (on --host's address) or HOST:PORT, e.g. 0.0.0.0:8928; advertised as _sendspin._tcp when Avahi runs. [env AUDIOGATE_SENDSPIN_PORT]")
    var sendspinPort: String?

    @Option(help: "Name the Sendspin server shows for this player (default: the host name). [env AUDIOGATE_SENDSPIN_NAME]")
    var sendspinName: String?

    @Option(help: "Playback stream the Sendspin music plays on. [env AUDIOGATE_SENDSPIN_STREAM]")
    var sendspinStream: String?

    @Option(help: "Delay after the audio port (external amplifier, speakers) in milliseconds, 0-5000. [env AUDIOGATE_SENDSPIN_OUTPUT_DELAY_MS]")
    var sendspinOutputDelayMs: Int?

    @Option(help: "Codecs offered to the server, most wanted first (pcm, flac, opus; default flac,pcm,opus). [env AUDIOGATE_SENDSPIN_CODECS]")
    var sendspinCodecs: String?

    @Option(help: "Static pairing code (8 digits) a server's operator types in to pair with this player while POST /v1/sendspin/pairing holds a window open; prefer the variable, which the process list does not show. [env AUDIOGATE_SENDSPIN_PAIRING_CODE]")
    var sendspinPairingCode: String?

    /// The flags, with `AUDIOGATE_*` variables for those left unset.
    var configuration: SendspinConfiguration {
        get throws(Invalid) {
            var configuration = SendspinConfiguration()
            configuration.url = sendspinServer ?? Environment.string("sendspin-server")
            if let text = sendspinPort ?? Environment.string("sendspin-port") {
                guard let listen = SendspinConfiguration.ListenAddress(text) else {
                    throw Invalid(message: "--sendspin-port must be PORT or HOST:PORT, not '\(text.prefix(64))'")
                }
                configuration.listen = listen
            }
            if let name = sendspinName ?? Environment.string("sendspin-name") { configuration.name = name }
            if let stream = sendspinStream ?? Environment.string("sendspin-stream") { configuration.stream = stream }
            if let delay = sendspinOutputDelayMs {
                configuration.outputDelayMilliseconds = delay
            } else if let text = Environment.string("sendspin-output-delay-ms") {
                guard let delay = Int(text) else {
                    throw Invalid(message: "AUDIOGATE_SENDSPIN_OUTPUT_DELAY_MS must be an integer 0-5000, not '\(text.prefix(64))'")
                }
                configuration.outputDelayMilliseconds = delay
            }
            configuration.staticPairingCode = sendspinPairingCode ?? Environment.string("sendspin-pairing-code")
            if let text = sendspinCodecs ?? Environment.string("sendspin-codecs") {
                guard let codecs = SendspinConfiguration.parseCodecs(text) else {
                    throw Invalid(message: "--sendspin-codecs takes pcm, flac and opus separated by commas, not '\(text.prefix(64))'")
                }
                configuration.codecs = codecs
            }
            return configuration
        }
    }
}
