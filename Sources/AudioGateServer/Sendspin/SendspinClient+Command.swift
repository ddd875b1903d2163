extension SendspinClient {
    /// Sends a controller command to the server. Throws `.unavailable` without a connection the
    /// server made a controller, `.conflict` for a command it does not list, `.badBody` for a
    /// value the command does not take.
    func send(_ command: SendspinCommand) throws(SendspinCommandError) {
        let (supported, commands) = state.withLock { ($0.controller?.supportedCommands, $0.commands) }
        guard let supported, let commands else {
            throw SendspinCommandError(.unavailable, "the Sendspin player is not connected to a server as a controller")
        }
        guard supported.contains(command.command) else {
            throw SendspinCommandError(
                .conflict,
                "the server does not take '\(command.command)' now; it takes \(supported.prefix(32).joined(separator: ", "))")
        }
        try command.validate()
        // The connection may have ended since the queue was looked up: then nothing was sent.
        if case .terminated = commands.yield(.json(SendspinOutbound.clientCommand(command))) {
            throw SendspinCommandError(.unavailable, "the connection to the Sendspin server ended before the command went out")
        }
    }
}
