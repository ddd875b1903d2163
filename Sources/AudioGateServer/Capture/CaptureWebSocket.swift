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
        let subscriber: CaptureSubscriber
        do throws(APIError) {
            subscriber = try hub.subscribe(parameters, transport: .webSocket)
        } catch {
            try await outbound.write(.text(ErrorMessage(code: error.code.rawValue, message: error.message).json()))
            try await outbound.close(.policyViolation, reason: error.code.rawValue)
            return
        }
        defer { hub.unsubscribe(subscriber) }
        await CaptureConnection.limitSendBuffer(channel)

        let start = StartMessage(
            rate: parameters.format.rate, channels: parameters.format.channels,
            format: parameters.format.sampleFormat, chunkMs: parameters.chunkMilliseconds,
            processing: parameters.processing)
        try await outbound.write(.text(start.json()))

        await withGracefulShutdownHandler {
            await serve(subscriber, inbound: inbound, outbound: outbound, logger: logger)
        } onGracefulShutdown: {
            subscriber.close()
        }
    }

    private func serve(
        _ subscriber: CaptureSubscriber, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter,
        logger: Logger
    ) async {
        await withTaskGroup(of: Void.self) { group in
            // Reading keeps pings and the close handshake working; the client has nothing to say.
            group.addTask {
                do {
                    for try await _ in inbound {}
                } catch {
                    logger.debug("capture socket read ended", metadata: ["error": "\(error)"])
                }
            }
            group.addTask {
                do {
                    try await send(subscriber, to: outbound)
                } catch {
                    logger.debug("capture socket write ended", metadata: ["error": "\(error)"])
                }
            }
            // Either side ending ends the connection.
            await group.next()
            subscriber.close()
            group.cancelAll()
        }
    }

    private func send(_ subscriber: CaptureSubscriber, to outbound: WebSocketOutboundWriter) async throws {
        let json = subscriber.parameters.encoding == .json
        var chunk: [UInt8] = []
        while let event = await subscriber.next(into: &chunk) {
            switch event {
            case .chunk(let seq, let timestamp, let ready):
                if json {
                    let text = chunk.withUnsafeBytes { pcm in
                        AudioMessage.json(seq: seq, timestampMs: Double(timestamp) / 1e6, pcm: pcm)
                    }
                    try await outbound.write(.text(text))
                } else {
                    try await outbound.write(.binary(ByteBuffer(bytes: chunk)))
                }
                let now = MonotonicClock.nowNanoseconds()
                hub.metrics.recordSendDelay(nanoseconds: now > ready ? now - ready : 0)
            case .overrun(let milliseconds):
                hub.metrics.recordDropped(milliseconds: milliseconds)
                try await outbound.write(.text(OverrunMessage(droppedMs: milliseconds).json()))
            case .device(let state):
                try await outbound.write(.text(DeviceMessage(state: state).json()))
            case .level(let rms, let peak):
                try await outbound.write(.text(LevelMessage(rmsDBFS: rms, peakDBFS: peak).json()))
            case .voice(let speech, let timestamp):
                let state: VoiceActivityMessage.State = speech ? .speech : .silence
                try await outbound.write(.text(VoiceActivityMessage(state: state, timestampMs: Double(timestamp) / 1e6).json()))
            }
        }
    }
}
