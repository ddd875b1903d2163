import ArgumentParser
import AudioGateServer

/// `audiogate sendspin-token`: prints the pairing token a Sendspin server that requires pairing asks for.
struct SendspinTokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sendspin-token",
        abstract: "Print the Sendspin player's pairing token (SP:0...), for a server that requires pairing.",
        discussion: """
            The token holds the player's identity and its Pairing PSK, both kept in the data \
            directory (made there on first use). Give it only to the server you pair with: \
            whoever holds it can pair with the player.
            """)

    @Option(help: "Folder of the player's keys, as given to serve (env AUDIOGATE_DATA_DIR).")
    var dataDir: String = Environment.string("data-dir") ?? ServerConfiguration.defaultDataDirectory

    func run() throws {
        print(try SendspinPairing.token(dataDirectory: dataDir))
    }
}
