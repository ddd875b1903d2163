import AudioGateCore
import Logging
import NIOCore

/// One mic connection: `audio-start`, then the card's audio as `audio-chunk` events of
/// `samplesPerChunk` frames, from a capture subscriber like a WebSocket client's (a client that
/// falls behind loses its oldest audio); `describe` is answered with the mic program.
struct WyomingMicSession: Sendable {
    let hub: CaptureHub
    let configuration: WyomingConfiguration
    let logger: Logger

    /// Capture chunks the subscriber hands out; they are regrouped into Wyoming chunks.
    static let captureChunkMilliseconds = 20

    func run(_ connection: WyomingService.Connection) async throws {
        var parameters = CaptureParameters()
        parameters.format = configuration.micFormat
        parameters.chunkMilliseconds = Self.captureChunkMilliseconds
        parameters.processing = configuration.micProcessing
        let subscriber = try hub.subscribe(parameters, transport: .wyoming)
        do {
            try await stream(subscriber, over: connection)
        } catch {
            await hub.leave(subscriber)
            throw error
        }
        // Leaving joins the processing thread of a group this connection was the last of.
        await hub.leave(subscriber)
    }

    private func stream(_ subscriber: CaptureSubscriber, over connection: WyomingService.Connection) async throws {
        await CaptureConnection.limitSendBuffer(connection.channel)
        let configuration = configuration
        let format = configuration.micFormat
        try await connection.executeThenClose { inbound, outbound in
            try await outbound.write(
                .audio(
                    WyomingEvent.Kind.audioStart, rate: format.rate, width: configuration.micWidth,
                    channels: format.channels, timestamp: 0))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await event in inbound {
                        try await answer(event, outbound: outbound)
                    }
                }
                group.addTask {
                    try await send(subscriber, to: outbound)
                }
                // Either side ending ends the connection; a reader's protocol error is rethrown.
                defer {
                    subscriber.close()
                    group.cancelAll()
                }
                try await group.next()
            }
        }
    }

    private func answer(_ event: WyomingEvent, outbound: NIOAsyncChannelOutboundWriter<WyomingEvent>) async throws {
        switch event.type {
        case WyomingEvent.Kind.describe:
            let format = configuration.micFormat
            try await outbound.write(
                WyomingInfo.mic(rate: format.rate, width: configuration.micWidth, channels: format.channels))
        case WyomingEvent.Kind.ping:
            try await outbound.write(WyomingEvent(type: WyomingEvent.Kind.pong, data: event.data))
        case let type where WyomingInfo.protocolEvents.contains(type):
            logger.debug("wyoming mic ignores '\(type)'")
        default:
            throw WyomingError(.unexpectedEvent, "unknown event type '\(event.type.prefix(64))'")
        }
    }

    /// Regroups the subscriber's chunks into `samplesPerChunk` frames; `timestamp` is milliseconds
    /// of audio since `audio-start`, dropped audio included.
    private func send(_ subscriber: CaptureSubscriber, to outbound: NIOAsyncChannelOutboundWriter<WyomingEvent>) async throws {
        let format = configuration.micFormat
        let width = configuration.micWidth
        let chunkBytes = configuration.samplesPerChunk * format.bytesPerFrame
        var pending = ByteBuffer()
        pending.reserveCapacity(chunkBytes * 2)
        var sentFrames = 0
        var chunk: [UInt8] = []
        while let event = await subscriber.next(into: &chunk) {
            switch event {
            case .chunk(_, _, let ready):
                pending.writeBytes(chunk)
                while pending.readableBytes >= chunkBytes, let audio = pending.readSlice(length: chunkBytes) {
                    let timestamp = Int(format.milliseconds(forFrames: sentFrames).rounded())
                    try await outbound.write(
                        .audio(
                            WyomingEvent.Kind.audioChunk, rate: format.rate, width: width, channels: format.channels,
                            timestamp: timestamp, payload: audio))
                    sentFrames += configuration.samplesPerChunk
                }
                pending.discardReadBytes()
                let now = MonotonicClock.nowNanoseconds()
                hub.metrics.recordSendDelay(nanoseconds: now > ready ? now - ready : 0)
            case .overrun(let milliseconds):
                hub.metrics.recordDropped(milliseconds: milliseconds)
                sentFrames += format.frames(forMilliseconds: Double(milliseconds))
            case .device, .level, .voice, .music:
                break
            }
        }
    }
}
