import ArgumentParser
import AudioGateServer

/// `audiogate`: a local audio gateway. `serve` is the default subcommand.
struct AudioGateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audiogate",
        abstract: "A local audio gateway: one process owns the sound card and serves it over HTTP and WebSocket.",
        discussion: """
            Every serve flag can also be set by an environment variable AUDIOGATE_<FLAG>, \
            e.g. AUDIOGATE_PORT=9000 or AUDIOGATE_CAPTURE_DEVICE=plughw:1,0; repeatable flags \
            take a comma-separated list. Flags win over the environment.
            """,
        version: AudioGateVersion.current,
        subcommands: [ServeCommand.self, DevicesCommand.self, SendspinTokenCommand.self],
        defaultSubcommand: ServeCommand.self)
}
