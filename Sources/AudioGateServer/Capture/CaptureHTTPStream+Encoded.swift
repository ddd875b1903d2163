import AudioGateCore
import Hummingbird
import NIOCore
import ServiceLifecycle

extension CaptureHTTPStream {
    /// Milliseconds of encoded audio a client's queue holds before its oldest pieces go.
    static let encodedQueueMilliseconds = 4000

    /// `container=ogg|webm|flac|mp3`: the shared encoder's stream, each page or frame sent as soon
    /// as it is complete. With `seconds` the client has an encoder of its own, so the file ends
    /// properly (trailer, exact length); the length in bytes is not known ahead, so the body is chunked.
    func encodedResponse(_ parameters: CaptureParameters, encoding: AudioEncoding, context: AudioGateRequestContext) -> Response {
        let hub = hub
        let channel = context.channel
        let key = CaptureEncoder.Key(encoding: encoding, processing: parameters.processing)
        let limitFrames = parameters.seconds.map { Int(($0 * Double(encoding.rate)).rounded()) }
        // Pieces last up to 100 ms (pages, clusters, FLAC frames) or one MP3 frame (24-72 ms).
        let capacity = Self.encodedQueueMilliseconds / 20
        let body = ResponseBody { writer in
            await CaptureConnection.limitSendBuffer(channel)
            let listener = EncodedListener(capacity: capacity, rate: encoding.rate)
            let encoder = try hub.encoders.join(
                key, listener: listener, limitFrames: limitFrames, chunkMilliseconds: 20, hub: hub)
            let streamed: Result<Void, any Error>
            do {
                try await withGracefulShutdownHandler {
                    while let event = await listener.next() {
                        switch event {
                        case .piece(let bytes):
                            try await writer.write(bytes)
                        case .overrun(let milliseconds):
                            hub.metrics.recordDropped(milliseconds: milliseconds)
                        }
                    }
                } onGracefulShutdown: {
                    listener.close()
                }
                streamed = .success(())
            } catch {
                streamed = .failure(error)
            }
            hub.encoders.leave(encoder, listener: listener)
            try streamed.get()
            try await writer.finish(nil)
        }
        return Response(
            status: .ok, headers: [.contentType: encoding.contentType, .cacheControl: "no-store"], body: body)
    }
}
