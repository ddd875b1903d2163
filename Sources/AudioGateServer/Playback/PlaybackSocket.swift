import AudioGateCore
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore

/// One `/v1/playback` WebSocket: reads audio, marks and clears, writes the stream's events.
struct PlaybackSocket {
    let mixer: PlaybackMixer
    let parameters: PlaybackParameters
    let maxMessageBytes: Int
    /// Takes the usual messages on the event loop; nil: every message comes through `inbound`.
    let frames: NIOLoopBound<PlaybackFrameHandler>?
    let logger: Logger

    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        // Whatever the handler still holds must reach the reader: the client's close, at least.
        defer { if let frames { frames.eventLoop.execute { frames.value.detach() } } }
        let stream: PlaybackStream
        do {
            stream = try mixer.acquire(parameters.stream)
        } catch {
            try await outbound.write(.text(ErrorMessage(code: error.code.rawValue, message: error.message).json()))
            try await outbound.close(.policyViolation, reason: "too many streams")
            return
        }
        let listener = PlaybackListener()
        stream.addListener(listener)
        if let frames {
            let target = PlaybackFrameHandler.Target(
                stream: stream, listener: listener, format: parameters.format, mixFormat: mixer.mixFormatProvider)
            frames.eventLoop.execute { frames.value.attach(target) }
        }
        defer {
            stream.removeListener(listener)
            mixer.release(stream)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // The only writer of this socket: events from the device side and errors from the reader.
                for await event in listener.events {
                    try await outbound.write(.text(event.json))
                }
            }
            defer { group.cancelAll() }
            try await read(inbound: inbound, stream: stream, listener: listener)
        }
    }

    private func read(inbound: WebSocketInboundStream, stream: PlaybackStream, listener: PlaybackListener) async throws {
        let format = parameters.format
        let bytesPerFrame = format.bytesPerFrame
        var carry: [UInt8] = []
        let mixFormat = mixer.mixFormatProvider
        func queuePCM(_ bytes: some Collection<UInt8>) async throws {
            if carry.isEmpty, bytes.count % bytesPerFrame == 0 {
                // The usual message, whole frames with nothing carried over: one copy, straight in.
                guard !bytes.isEmpty else { return }
                _ = try await stream.enqueue(Array(bytes), format: format, mixFormat: mixFormat)
                return
            }
            var pending = carry
            pending.append(contentsOf: bytes)
            let whole = pending.count - pending.count % bytesPerFrame
            carry = Array(pending[whole...])
            guard whole > 0 else { return }
            pending.removeLast(pending.count - whole)
            _ = try await stream.enqueue(pending, format: format, mixFormat: mixFormat)
        }
        // `?format=mp3|ogg|flac|webm`: audio messages are pieces of a compressed file.
        var session: CompressedSession?
        func decode(_ bytes: [UInt8], container: AudioContainer) async throws {
            let current = session ?? CompressedSession(container: container, stream: stream, mixFormat: mixFormat)
            session = current
            if try await !current.write(bytes) { try await endFile() }
        }
        func endFile() async throws {
            guard let current = session else { return }
            session = nil
            if let event = current.errorEvent(await current.finish()) { listener.send(event) }
        }
        func queue(_ bytes: some Collection<UInt8>) async throws {
            if let container = parameters.container { return try await decode(Array(bytes), container: container) }
            try await queuePCM(bytes)
        }
        defer { if let session { Task { await session.cancel() } } }
        do {
            for try await message in inbound.messages(maxSize: maxMessageBytes) {
                switch message {
                case .binary(let buffer):
                    try await queue(buffer.readableBytesView)
                case .text(let text):
                    guard let decoded = listener.decode(text) else { continue }
                    switch decoded {
                    case .audio(let data): try await queue(data)
                    case .mark(let name):
                        try await endFile()
                        stream.addMark(name, listener: listener)
                    case .clear:
                        if let current = session {
                            session = nil
                            await current.cancel()
                        }
                        carry.removeAll()
                        stream.clear()
                    }
                }
            }
            try await endFile()
        } catch is CancellationError {
            return
        }
        // Let the writer deliver what is already queued (e.g. a final error) before the socket closes.
        listener.finish()
    }
}
