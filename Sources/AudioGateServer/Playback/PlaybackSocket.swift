import AudioGateCore
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore

/// One `/v1/playback` WebSocket: its `PlaybackFrameHandler` takes every message on the event loop;
/// this task owns the stream for the socket's life and is the only writer of the stream's events.
struct PlaybackSocket {
    let mixer: PlaybackMixer
    let parameters: PlaybackParameters
    let maxMessageBytes: Int
    /// The socket's read path, installed behind the frame decoder at the upgrade.
    let frames: NIOLoopBound<PlaybackFrameHandler>
    let logger: Logger

    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        let stream: PlaybackStream
        do {
            stream = try mixer.acquire(parameters.stream, role: parameters.role)
        } catch {
            try await outbound.write(.text(ErrorMessage(code: error.code.rawValue, message: error.message).json()))
            try await outbound.close(.policyViolation, reason: "too many streams")
            return
        }
        let listener = PlaybackListener()
        stream.addListener(listener)
        defer {
            stream.removeListener(listener)
            mixer.release(stream)
        }
        let target = PlaybackFrameHandler.Target(
            ingest: PlaybackIngest(stream: stream, format: parameters.format, mixFormat: mixer.mixFormatProvider),
            listener: listener, container: parameters.container, mixFormat: mixer.mixFormatProvider,
            maxMessageBytes: maxMessageBytes, decoders: mixer.decoders)
        let frames = frames
        frames.eventLoop.execute { frames.value.attach(target) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // The only writer of this socket: events from the device side and the read path.
                for await event in listener.events {
                    try await outbound.write(.text(event.json))
                }
            }
            defer { group.cancelAll() }
            // Data frames never get here; this answers pings and ends at the client's close.
            for try await _ in inbound {}
            // Everything before the close is in the stream (a compressed file's last audio too).
            await target.done.waitIgnoringCancellation()
            // Let the writer deliver what is already queued (e.g. a final error) before the socket closes.
            listener.finish()
            try await group.next()
        }
    }
}
