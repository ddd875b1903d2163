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
        // Each value: its key, the one command that takes it, what it may be, and whether it fits.
        let values: [(key: String, command: String, allowed: String, given: Bool, fits: Bool)] = [
            ("volume", "volume", "0-100", volume != nil, volume.map { (0...100).contains($0) } ?? false),
            ("mute", "mute", "true|false", mute != nil, mute != nil),
            ("position_ms", "seek", ">= 0", positionMs != nil, positionMs.map { $0 >= 0 } ?? false),
            ("offset_ms", "seek_relative", "milliseconds", offsetMs != nil, offsetMs != nil),
        ]
        for value in values {
            if command == value.command, !value.fits {
                throw SendspinCommandError(.badBody, "'\(value.command)' takes \"\(value.key)\": \(value.allowed)")
            }
            if command != value.command, value.given {
                throw SendspinCommandError(.badBody, "only '\(value.command)' takes \"\(value.key)\"")
            }
        }
    }
}
