import AudioGateCore
import Foundation
import Hummingbird
import NIOCore

/// `POST /v1/playback`: a WAV file, raw PCM or compressed audio, played while it is still arriving.
struct PlaybackUpload {
    let mixer: PlaybackMixer
    let parameters: PlaybackParameters

    /// Most bytes buffered while looking for the end of a WAV header.
    static let maximumHeaderBytes = 64 * 1024

    struct Answer: Encodable {
        var stream: String
        var durationMs: Int
        var queuedMs: Int
        var playedMs: Int?
    }

    /// The 413 for a body over `--max-body-mb`.
    var tooLarge: PlaybackError {
        PlaybackError(.tooLarge, "the body is larger than \(mixer.configuration.limits.maxBodyMegabytes) MB (--max-body-mb)")
    }

    func run(request: Request) async throws -> Response {
        try Self.checkContentType(request.headers[.contentType])
        let maxBodyBytes = mixer.configuration.limits.maxBodyBytes
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > maxBodyBytes { throw tooLarge }
        var body = request.body.makeAsyncIterator()
        var head: [UInt8] = []
        var startNanoseconds: UInt64 = 0
        var ended = false
        while head.count < 4, !ended {
            if let buffer = try await body.next() {
                if startNanoseconds == 0, buffer.readableBytes > 0 { startNanoseconds = MonotonicClock.nowNanoseconds() }
                head.append(contentsOf: buffer.readableBytesView)
            } else {
                ended = true
            }
        }
        guard !head.isEmpty else { throw PlaybackError(.badBody, "the body is empty: send a WAV file or raw PCM") }
        if let container = compressedContainer(contentType: request.headers[.contentType], head: head) {
            return try await runCompressed(
                container: container, head: head, body: &body, ended: ended, startNanoseconds: startNanoseconds)
        }

        var format = parameters.format
        if let g711 = Self.g711Format(request.headers[.contentType]) {
            guard !parameters.rawFormatGiven || format == g711 else {
                throw PlaybackError(.badParameter, "invalid 'format': the Content-Type says \(g711.sampleFormat.rawValue) at 8000 Hz mono")
            }
            format = g711
        }
        var remaining: Int?
        if Self.declaresWAV(request.headers[.contentType]), !head.starts(with: Array("RIFF".utf8)) {
            throw PlaybackError(.badBody, "the body is labelled audio/wav but does not start with a RIFF header")
        }
        if head.starts(with: Array("RIFF".utf8)) {
            while true {
                do throws(WAVError) {
                    let header = try WAVHeader.parse(head)
                    format = header.format
                    remaining = header.dataByteCount
                    head.removeFirst(min(header.dataOffset, head.count))
                    break
                } catch where error.code == .truncated {
                    guard head.count <= Self.maximumHeaderBytes else {
                        throw PlaybackError(.badBody, "no WAV data chunk within the first \(Self.maximumHeaderBytes) bytes")
                    }
                    guard !ended, let buffer = try await body.next() else {
                        throw PlaybackError(.badBody, "the WAV header is truncated: \(error.message)")
                    }
                    head.append(contentsOf: buffer.readableBytesView)
                } catch {
                    throw Self.playbackError(error)
                }
            }
        }

        let stream = try mixer.acquire(parameters.stream, role: parameters.role)
        defer { mixer.release(stream) }
        let listener = PlaybackListener()
        if parameters.wait { stream.addListener(listener) }
        defer { if parameters.wait { stream.removeListener(listener) } }

        let ingest = PlaybackIngest(stream: stream, format: format, mixFormat: mixer.mixFormatProvider)
        let startPosition = ingest.position
        var received = head.count
        var probed = false
        func queue(_ buffer: ByteBuffer) async throws {
            var buffer = buffer
            if let left = remaining {
                if buffer.readableBytes > left { buffer = buffer.getSlice(at: buffer.readerIndex, length: left)! }
                remaining = left - buffer.readableBytes
            }
            guard buffer.readableBytes > 0 else { return }
            if !probed {
                probed = true
                ingest.probeLatency(startNanoseconds: startNanoseconds)
            }
            _ = try await ingest.write(buffer)
        }
        try await queue(ByteBuffer(bytes: head))
        while !ended, remaining.map({ $0 > 0 }) ?? true {
            guard let buffer = try await body.next() else { break }
            received += buffer.readableBytes
            guard received <= maxBodyBytes else {
                // What was queued plays out like the end of any upload: no partial frame is left
                // carried and running dry after it is no underrun.
                ingest.finish()
                throw tooLarge
            }
            try await queue(buffer)
        }
        let frames = ingest.frames
        guard frames > 0 else { throw PlaybackError(.badBody, "the body holds no audio frames") }
        ingest.finish()
        let endPosition = ingest.position

        var answer = Answer(
            stream: stream.name, durationMs: Int((format.milliseconds(forFrames: frames)).rounded()),
            queuedMs: Int(stream.queuedMilliseconds.rounded()))
        if parameters.wait {
            answer.playedMs = try await Self.waitUntilHeard(
                listener: listener, ingest: ingest, start: startPosition, end: endPosition)
        }
        return try JSONResponse.make(answer)
    }

    /// Waits for the mark placed at the end of this upload (or a clear); returns ms of it heard.
    /// Throws `CancellationError` when the wait was cut short (graceful shutdown): that is no answer.
    static func waitUntilHeard(listener: PlaybackListener, ingest: PlaybackIngest, start: UInt64, end: UInt64) async throws -> Int {
        guard ingest.mark("upload-end", listener: listener) else {
            throw PlaybackError(
                .tooManyMarks,
                "the audio was queued, but \(ingest.stream.maxPendingMarks) marks already wait on stream '\(ingest.stream.name)', so its end cannot be waited for")
        }
        let rate = Double(max(ingest.stream.queued.rate, 1))
        for await event in listener.events {
            switch event {
            case .mark:
                return Int((Double(end - start) * 1000 / rate).rounded())
            case .cleared(_, _, let renderedFrame, _):
                let heard = min(max(renderedFrame, start), end) - start
                return Int((Double(heard) * 1000 / rate).rounded())
            default:
                continue
            }
        }
        try Task.checkCancellation()
        return 0
    }

    /// True when the Content-Type says WAV.
    static func declaresWAV(_ value: String?) -> Bool {
        guard let type = ContentType.mediaType(value) else { return false }
        return ["audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave"].contains(type)
    }

    /// Rejects media types that cannot be PCM; everything else is sniffed.
    static func checkContentType(_ value: String?) throws(PlaybackError) {
        guard let type = ContentType.mediaType(value) else { return }
        if type == "audio/l16" {
            throw PlaybackError(
                .unsupportedMediaType,
                "audio/L16 is big-endian (RFC 2586); send little-endian PCM as application/octet-stream or audio/pcm")
        }
        let accepted: Set<String> = [
            "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave", "audio/pcm", "audio/raw", "audio/basic", "audio/pcmu", "audio/pcma",
        ]
        if type.hasPrefix("audio/"), !accepted.contains(type), AudioContainer.mediaTypes[type] == nil {
            throw PlaybackError(
                .unsupportedMediaType,
                "\(type) is not supported: send WAV (audio/wav), MP3 (audio/mpeg), Ogg Opus/Vorbis (audio/ogg), FLAC (audio/flac), WebM/Opus (audio/webm) or raw PCM (application/octet-stream)")
        }
    }

    /// G.711 named by the Content-Type: `audio/basic` (RFC 2046) and `audio/PCMU` are μ-law,
    /// `audio/PCMA` A-law, all 8 kHz mono.
    static func g711Format(_ value: String?) -> AudioFormat? {
        guard let type = ContentType.mediaType(value) else { return nil }
        switch type {
        case "audio/basic", "audio/pcmu": return AudioFormat(rate: 8000, channels: 1, sampleFormat: .mulaw)
        case "audio/pcma": return AudioFormat(rate: 8000, channels: 1, sampleFormat: .alaw)
        default: return nil
        }
    }

    /// Maps a WAV problem to its status: 415 for encodings we cannot play, 400 for broken files.
    static func playbackError(_ error: WAVError) -> PlaybackError {
        switch error.code {
        case .unsupportedEncoding, .unsupportedBitDepth:
            PlaybackError(.unsupportedMediaType, error.message)
        default:
            PlaybackError(.badBody, error.message)
        }
    }
}
