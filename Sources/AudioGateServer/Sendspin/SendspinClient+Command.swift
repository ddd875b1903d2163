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
        commands.yield(.json(SendspinOutbound.clientCommand(command)))
    }
}
