import AudioGateCore
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle

extension CaptureWebSocket {
    /// Milliseconds of Opus packets a client's queue holds before its oldest go (reported as `overrun`).
    static let encodedQueueMilliseconds = 2000

    /// `format=opus`: `start` (codec, rate, channels, pre-skip), then one binary frame per Opus
    /// packet of `chunk_ms`, from the setting's shared encoder.
    func runEncoded(
        parameters: CaptureParameters, encoding: AudioEncoding, channel: any Channel, inbound: WebSocketInboundStream,
        outbound: WebSocketOutboundWriter, logger: Logger
    ) async throws {
        let listener = EncodedListener(
            capacity: Self.encodedQueueMilliseconds / encoding.packetMilliseconds, rate: encoding.rate)
        let encoder: CaptureEncoder
        do throws(CaptureError) {
            try hub.checkCapacity()
            encoder = try hub.encoders.join(
                CaptureEncoder.Key(encoding: encoding, processing: parameters.processing), listener: listener,
                limitFrames: nil, chunkMilliseconds: encoding.packetMilliseconds, hub: hub)
        } catch {
            try await outbound.write(.text(ErrorMessage(code: error.reason.rawValue, message: error.message).json()))
            try await outbound.close(.policyViolation, reason: error.reason.rawValue)
            return
        }
        await CaptureConnection.limitSendBuffer(channel)
        let start = EncodedStartMessage(
            codec: encoding.codec.rawValue, rate: encoding.rate, channels: encoding.channels,
            chunkMs: encoding.packetMilliseconds, bitrate: encoding.effectiveBitrate, preSkip: encoder.preSkip,
            processing: parameters.processing.isEnabled ? parameters.processing : nil)
        let metrics = hub.metrics
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        for try await _ in inbound {}
                    } catch {
                        logger.debug("capture socket read ended", metadata: ["error": "\(error)"])
                    }
                }
                group.addTask {
                    do {
                        try await outbound.write(.text(start.json()))
                        while let event = await listener.next() {
                            switch event {
                            case .piece(let packet):
                                try await outbound.write(.binary(packet))
                            case .overrun(let milliseconds):
                                metrics.recordDropped(milliseconds: milliseconds)
                                try await outbound.write(.text(OverrunMessage(droppedMs: milliseconds).json()))
                            }
                        }
                    } catch {
                        logger.debug("capture socket write ended", metadata: ["error": "\(error)"])
                    }
                }
                await group.next()
                listener.close()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            listener.close()
        }
        hub.encoders.leave(encoder, listener: listener)
    }
}
