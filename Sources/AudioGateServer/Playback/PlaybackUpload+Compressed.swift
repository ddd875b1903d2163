import AudioGateCore
import Foundation
import Hummingbird
import NIOCore

extension PlaybackUpload {
    /// The answer to a compressed upload: the PCM answer plus what was decoded and where it stopped.
    struct CompressedAnswer: Encodable {
        var stream: String
        var durationMs: Int
        var queuedMs: Int
        var playedMs: Int?
        var format: String
        var sourceRate: Int
        var sourceChannels: Int
        var decodeError: DecodeStop?
    }

    /// A decoder error after some audio was queued: that audio plays, this says where it stopped.
    struct DecodeStop: Encodable {
        var code: String
        var message: String
        var atMs: Int
    }

    /// The container of a compressed body: from `?format=`, the Content-Type, or for an unlabelled
    /// body without raw PCM parameters, from its magic number.
    func compressedContainer(contentType: String?, head: [UInt8]) -> AudioContainer? {
        if let container = parameters.container { return container }
        if let container = AudioContainer.from(contentType: contentType) { return container }
        guard !parameters.rawFormatGiven, !Self.declaresWAV(contentType) else { return nil }
        let type = ContentType.mediaType(contentType)
        guard type == nil || type == "application/octet-stream" else { return nil }
        return AudioContainer.sniff(head)
    }

    /// Streams a compressed body through a decoder thread into the stream.
    func runCompressed(
        container: AudioContainer, head: [UInt8], body: inout RequestBody.AsyncIterator, ended: Bool,
        startNanoseconds: UInt64
    ) async throws -> Response {
        guard let slot = mixer.decoders.reserve() else { throw mixer.decoders.refusal }
        let stream = try mixer.acquire(parameters.stream, role: parameters.role)
        defer { mixer.release(stream) }
        let listener = PlaybackListener()
        if parameters.wait { stream.addListener(listener) }
        defer { if parameters.wait { stream.removeListener(listener) } }

        let ingest = PlaybackIngest.decoded(stream: stream, mixFormat: mixer.mixFormatProvider)
        let startPosition = ingest.position
        let queue = ByteQueue()
        _ = queue.offer(head)
        var received = head.count
        // The decoder thread may wait for room in the stream long after the body ended; a cancelled
        // request (graceful shutdown) stops it through the queue.
        let outcome = try await withTaskCancellationHandler {
            async let decoded = CompressedPlayback.decode(
                container: container, queue: queue, ingest: ingest, startNanoseconds: startNanoseconds, slot: slot)
            do {
                // Stops early when the decoder gave up: the rest of the body would only be dropped.
                while !ended, !queue.isReaderGone {
                    guard let buffer = try await body.next() else { break }
                    received += buffer.readableBytes
                    guard received <= mixer.configuration.limits.maxBodyBytes else { throw tooLarge }
                    try await queue.write(Array(buffer.readableBytesView))
                }
                queue.finish()
            } catch {
                queue.cancel()
                _ = await decoded
                // What was queued plays out; running dry after it is no underrun.
                stream.placeBoundary()
                throw error
            }
            return await decoded
        } onCancel: {
            queue.cancel()
        }
        stream.metrics.bytesIn.increment(by: Int64(received))

        if outcome.frames == 0 {
            guard let error = outcome.error else {
                throw PlaybackError(.badBody, "the \(container.rawValue) body holds no audio frames")
            }
            if error.code == .cancelled { throw CancellationError() }
            throw PlaybackError(codec: error, container: container)
        }
        let endPosition = ingest.position
        var answer = CompressedAnswer(
            stream: stream.name, durationMs: Int(outcome.milliseconds.rounded()),
            queuedMs: Int(stream.queuedMilliseconds.rounded()), format: container.rawValue, sourceRate: outcome.rate,
            sourceChannels: outcome.channels)
        if let error = outcome.error {
            if error.code == .cancelled { throw CancellationError() }
            answer.decodeError = DecodeStop(
                code: error.code.rawValue, message: error.message, atMs: Int(outcome.milliseconds.rounded()))
        }
        if parameters.wait {
            answer.playedMs = try await Self.waitUntilHeard(listener: listener, ingest: ingest, start: startPosition, end: endPosition)
        }
        return try JSONResponse.make(answer)
    }
}
