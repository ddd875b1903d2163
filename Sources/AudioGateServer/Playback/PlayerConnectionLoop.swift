import AudioGateCore
import AudioGateDevices
import Logging
import ServiceLifecycle

/// How a network player (the Snapcast client, the Sendspin player) keeps its server: one
/// connection at a time until graceful shutdown, a back-off between them that starts over after a
/// connection that played, and one log line and one recorded reason for every way a connection ends.
struct PlayerConnectionLoop<Codes: ErrorCode>: Sendable {
    /// The player's name in the log ("snapcast", "sendspin").
    let player: String
    /// The server's address, for the log.
    let server: String
    let logger: Logger

    /// Runs `connection` (one connection, start to end) until graceful shutdown. After each,
    /// `played` says whether it got as far as playing and `ended` keeps why it ended; `failed`
    /// sees the player's own errors before they are logged.
    func run(
        connection: @escaping @Sendable () async throws -> Void,
        played: @escaping @Sendable () -> Bool,
        ended: @escaping @Sendable (String) -> Void,
        failed: @escaping @Sendable (CodedError<Codes>) -> Void = { _ in }
    ) async {
        await cancelWhenGracefulShutdown {
            var backoff = Backoff()
            while !Task.isCancelled {
                await once(connection, ended: ended, failed: failed)
                if played() { backoff.reset() }
                guard !Task.isCancelled else { break }
                try? await Task.sleep(for: .milliseconds(backoff.next()))
            }
        }
    }

    /// Runs one connection and logs and records how it ended (a player that servers dial runs
    /// each connection they make this way).
    func once(
        _ connection: () async throws -> Void, ended: (String) -> Void, failed: (CodedError<Codes>) -> Void = { _ in }
    ) async {
        do {
            try await connection()
            if !Task.isCancelled {
                ended("the server closed the connection")
                logger.info("\(player) server \(server) closed the connection")
            }
        } catch let error as CodedError<Codes> {
            failed(error)
            ended(error.description)
            logger.warning("\(player) connection to \(server) closed: \(error)")
        } catch let error as any ResponseError {
            ended(error.message)
            logger.warning("\(player) stream refused: \(error.message)")
        } catch where Task.isCancelled {
            // Shutdown.
        } catch {
            ended("\(error)")
            logger.info("\(player) server \(server) unreachable: \(error)")
        }
    }
}
