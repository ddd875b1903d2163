import AudioGateCore
import Hummingbird
import ServiceLifecycle
import NIOCore

/// `GET /v1/capture`: live audio as a raw or WAV HTTP body, for curl and scripts.
///
/// The body is the client's subscriber queue written out chunk by chunk. With `seconds` the body
/// is exactly that much audio (and has a Content-Length); without it the stream ends when the client
/// goes away. Events (overrun, device) have no place in a byte stream: dropped audio just goes missing.
struct CaptureHTTPStream: Sendable {
    let hub: CaptureHub

    func response(_ request: Request, context: AudioGateRequestContext) throws -> Response {
        let parameters = try CaptureParameters(request: request)
        try hub.checkCapacity()
        if let encoding = parameters.compressed {
            guard encoding.container != .packets else {
                throw CaptureError.parameter("format", "opus is for the WebSocket; over HTTP use container=ogg or container=webm")
            }
            return encodedResponse(parameters, encoding: encoding, context: context)
        }
        let format = parameters.format
        let dataBytes = parameters.totalFrames.map { format.bytes(forFrames: $0) }
        let header: [UInt8] =
            parameters.container == .wav ? WAVHeader.encode(format: format, dataByteCount: dataBytes) : []
        let contentLength = dataBytes.map { $0 + header.count }
        let contentType = parameters.container == .wav ? "audio/wav" : "application/octet-stream"
        let hub = hub
        let channel = context.channel
        let body = ResponseBody(contentLength: contentLength) { writer in
            await CaptureConnection.limitSendBuffer(channel)
            let subscriber = try hub.subscribe(parameters, transport: .http)
            let streamed: Result<Void, any Error>
            do {
                if !header.isEmpty { try await writer.write(ByteBuffer(bytes: header)) }
                var remaining = dataBytes ?? Int.max
                var chunk: [UInt8] = []
                // A server shutting down ends endless streams instead of waiting for the client to leave.
                try await withGracefulShutdownHandler {
                    while remaining > 0, let event = await subscriber.next(into: &chunk) {
                        switch event {
                        case .chunk(_, _, let ready):
                            let count = min(remaining, chunk.count)
                            try await writer.write(ByteBuffer(bytes: chunk[0..<count]))
                            remaining -= count
                            let now = MonotonicClock.nowNanoseconds()
                            hub.metrics.recordSendDelay(nanoseconds: now > ready ? now - ready : 0)
                        case .overrun(let milliseconds):
                            hub.metrics.recordDropped(milliseconds: milliseconds)
                        case .device, .level, .voice, .music:
                            break
                        }
                    }
                } onGracefulShutdown: {
                    subscriber.close()
                }
                streamed = .success(())
            } catch {
                streamed = .failure(error)
            }
            await hub.leave(subscriber)
            try streamed.get()
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: contentType, .cacheControl: "no-store"], body: body)
    }
}
