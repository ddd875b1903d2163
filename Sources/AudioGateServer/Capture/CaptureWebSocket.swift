import AudioGateCore
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle

/// One `/v1/capture` WebSocket: `start`, then chunks and events from the client's subscriber.
struct CaptureWebSocket: Sendable {
    let hub: CaptureHub

    func run(
        parameters: CaptureParameters, channel: any Channel, inbound: WebSocketInboundStream,
        outbound: WebSocketOutboundWriter, logger: Logger
    ) async throws {
        if let encoding = parameters.compressed {
            try await runEncoded(
                parameters: parameters, encoding: encoding, channel: channel, inbound: inbound, outbound: outbound,
                logger: logger)
            return
        }
        let subscriber: CaptureSubscriber
        do throws(CaptureError) {
            subscriber = try hub.subscribe(parameters, transport: .webSocket, channel: channel)
        } catch {
            try await outbound.write(.text(ErrorMessage(code: error.reason.rawValue, message: error.message).json()))
            try await outbound.close(.policyViolation, reason: error.reason.rawValue)
            return
        }
        await CaptureConnection.limitSendBuffer(channel)

        let start = StartMessage(
            rate: parameters.format.rate, channels: parameters.format.channels,
            format: parameters.format.sampleFormat, chunkMs: parameters.chunkMilliseconds,
            processing: parameters.processing)
        // From here on the event loop writes the socket: the start message first, then the audio
        // queued meanwhile, then each period's batch (see `CaptureChannelWriter`).
        if let writer = subscriber.writer {
            let message = start.json()
            channel.eventLoop.execute { writer.start(subscriber, message: message) }
        }

        await withGracefulShutdownHandler {
            await serve(subscriber, inbound: inbound, logger: logger)
        } onGracefulShutdown: {
            subscriber.close()
        }
        await hub.leave(subscriber)
    }

    private func serve(_ subscriber: CaptureSubscriber, inbound: WebSocketInboundStream, logger: Logger) async {
        await withTaskGroup(of: Void.self) { group in
            // Reading keeps pings and the close handshake working; the client has nothing to say.
            group.addTask {
                do {
                    for try await _ in inbound {}
                } catch {
                    logger.debug("capture socket read ended", metadata: ["error": "\(error)"])
                }
            }
            // Ends when the hub, graceful shutdown or the reader closes the subscriber.
            group.addTask { await subscriber.waitUntilClosed() }
            // Either side ending ends the connection.
            await group.next()
            subscriber.close()
            group.cancelAll()
        }
    }
}
