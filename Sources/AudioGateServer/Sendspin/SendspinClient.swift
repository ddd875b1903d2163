import AudioGateCore
import AudioGateDevices
import Foundation
import HummingbirdWSClient
import Logging
import ServiceLifecycle
import Synchronization

/// Plays a Sendspin server's music in sync with its other players: dials the server, runs the
/// Noise handshake with the player's static key, keeps the time filter, decodes the chunks and
/// hands each to a timed `music` stream stamped with the moment it must leave the loudspeaker.
/// Reconnects with back-off until graceful shutdown.
public final class SendspinClient: Service, Sendable {
    let configuration: SendspinConfiguration
    let mixer: PlaybackMixer
    let logger: Logger
    /// The server's clock.
    public let clock = SendspinClock()
    let state: Mutex<State>

    /// What the connection knows, for `/v1/status`.
    struct State {
        /// Through the handshake and activated by the server.
        var connected = false
        var serverName: String?
        var serverID: String?
        var activities: [String] = []
        var codec: String?
        var format: SendspinStreamFormat?
        var stream: PlaybackStream?
        var volume = 100
        var muted = false
        var outputDelayMilliseconds: Int
        var playbackState: String?
        var connections = 0
        var lastError: String?
        /// The current connection handed a chunk to the stream.
        var played = false
        /// The Noise suite the next connection asks for.
        var suite: NoiseCipherSuite
    }

    public init(configuration: SendspinConfiguration, mixer: PlaybackMixer, logger: Logger) {
        self.configuration = configuration
        self.mixer = mixer
        self.logger = logger
        state = Mutex(State(outputDelayMilliseconds: configuration.outputDelayMilliseconds, suite: configuration.suite))
    }

    /// The server's URL.
    public var server: String { configuration.url ?? "" }

    public func run() async throws {
        let identity: SendspinIdentity
        do throws(SendspinError) {
            identity = try SendspinIdentity.loadOrCreate(directory: configuration.dataDirectory)
        } catch {
            record(error.message)
            logger.error("sendspin player off: \(error.message)")
            // A service that returns ends the server: wait for shutdown instead.
            try? await gracefulShutdown()
            return
        }
        logger.info("sendspin player joining \(server)", metadata: ["name": "\(configuration.name)", "id": "\(identity.clientID)"])
        await cancelWhenGracefulShutdown { [self] in
            var backoff = Backoff()
            while !Task.isCancelled {
                let played = await connectOnce(identity: identity)
                if played { backoff.reset() }
                guard !Task.isCancelled else { break }
                try? await Task.sleep(for: .milliseconds(backoff.next()))
            }
        }
        logger.info("sendspin player stopped")
    }

    /// One connection, start to end; true when it got as far as playing. Every way it ends is one log line.
    private func connectOnce(identity: SendspinIdentity) async -> Bool {
        state.withLock {
            $0.connections += 1
            $0.played = false
        }
        clock.reset()
        defer { closeStream() }
        do {
            let settings = WebSocketClientConfiguration(
                maxFrameSize: NoiseHandshake.maximumMessageBytes + 1, closeTimeout: .seconds(2),
                autoPing: .enabled(timePeriod: .seconds(10)))
            try await WebSocketClient.connect(url: server, configuration: settings, logger: logger) { inbound, outbound, _ in
                try await SendspinConnection(client: self, identity: identity).run(inbound: inbound, outbound: outbound)
            }
            if !Task.isCancelled {
                record("the server closed the connection")
                logger.info("sendspin server \(server) closed the connection")
            }
        } catch let error as SendspinError {
            if error.code == .unsupportedSuite {
                state.withLock { $0.suite = $0.suite == .chaChaPoly ? .aesGCM : .chaChaPoly }
            }
            record(error.description)
            logger.warning("sendspin connection to \(server) closed: \(error)")
        } catch let error as any ResponseError {
            record(error.message)
            logger.warning("sendspin stream refused: \(error.message)")
        } catch where Task.isCancelled {
            // Shutdown.
        } catch {
            record("\(error)")
            logger.info("sendspin server \(server) unreachable: \(error)")
        }
        return state.withLock { $0.played }
    }

    func record(_ error: String) {
        state.withLock {
            $0.connected = false
            $0.lastError = error
        }
    }

    /// Ends the connection's playing: without the server its queued audio has no clock.
    func closeStream() {
        state.withLock { $0.connected = false }
        releaseStream()
    }

    /// Silences and gives back the stream (`stream/end`, or the connection's end).
    func releaseStream() {
        let stream = state.withLock { state -> PlaybackStream? in
            defer {
                state.stream = nil
                state.codec = nil
                state.format = nil
            }
            return state.stream
        }
        if let stream { mixer.release(stream) }
    }
}
