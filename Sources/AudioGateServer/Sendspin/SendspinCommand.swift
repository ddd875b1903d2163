import Foundation

/// A controller command for the server: the body of `POST /v1/sendspin/command`, sent on as the
/// `controller` object of `client/command`.
struct SendspinCommand: Codable, Sendable, Equatable {
    /// The commands of `controller@v1`; the server lists which of them it takes.
    static let known: Set<String> = [
        "play", "pause", "stop", "next", "previous", "volume", "mute", "repeat_off", "repeat_one", "repeat_all",
        "shuffle", "unshuffle", "switch", "seek", "seek_relative",
    ]
    /// Longest body read.
    static let maximumBodyBytes = 4096

    var command: String
    /// 0-100, with `volume`.
    var volume: Int?
    /// With `mute`.
    var mute: Bool?
    /// With `seek`: where to, milliseconds from the track's start.
    var positionMs: Int?
    /// With `seek_relative`: how far, milliseconds, back when negative.
    var offsetMs: Int?

    enum CodingKeys: String, CodingKey {
        case command, volume, mute
        case positionMs = "position_ms"
        case offsetMs = "offset_ms"
    }

    /// Parses a request body; an unknown command is refused here, before the server is asked.
    static func parse(_ body: Data) throws(SendspinCommandError) -> SendspinCommand {
        let command: SendspinCommand
        do {
            command = try JSONDecoder().decode(SendspinCommand.self, from: body)
        } catch {
            throw SendspinCommandError(
                .badBody, "expected {\"command\": \"next\"} (with \"volume\": 0-100, \"mute\": true|false, "
                    + "\"position_ms\" or \"offset_ms\" for the commands that take them)")
        }
        guard known.contains(command.command) else {
            throw SendspinCommandError(
                .badBody, "unknown command '\(command.command.prefix(64))': one of \(known.sorted().joined(separator: ", "))")
        }
        return command
    }

    /// Checks that the command carries exactly the values it takes.
    func validate() throws(SendspinCommandError) {
        func refuse(_ message: String) -> SendspinCommandError { SendspinCommandError(.badBody, message) }
        let takes: (volume: Bool, mute: Bool, position: Bool, offset: Bool) = (
            command == "volume", command == "mute", command == "seek", command == "seek_relative"
        )
        if takes.volume {
            guard let volume, (0...100).contains(volume) else { throw refuse("'volume' takes \"volume\": 0-100") }
        } else if volume != nil {
            throw refuse("only 'volume' takes \"volume\"")
        }
        if takes.mute {
            guard mute != nil else { throw refuse("'mute' takes \"mute\": true|false") }
        } else if mute != nil {
            throw refuse("only 'mute' takes \"mute\"")
        }
        if takes.position {
            guard let positionMs, positionMs >= 0 else { throw refuse("'seek' takes \"position_ms\" >= 0") }
        } else if positionMs != nil {
            throw refuse("only 'seek' takes \"position_ms\"")
        }
        if takes.offset {
            guard offsetMs != nil else { throw refuse("'seek_relative' takes \"offset_ms\"") }
        } else if offsetMs != nil {
            throw refuse("only 'seek_relative' takes \"offset_ms\"")
        }
    }
}
