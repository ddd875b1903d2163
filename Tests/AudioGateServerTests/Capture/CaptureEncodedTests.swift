import AudioGateCore
@testable import AudioGateServer
import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// Compressed live capture: the tone played into the test card, captured, encoded by the server
/// and judged by ffmpeg/ffprobe (and libavcodec for single Opus packets).
@Suite("compressed capture", .serialized)
struct CaptureEncodedTests {
    struct Case: Sendable, CustomStringConvertible {
        var query: String
        var fileExtension: String
        var contentType: String
        var codecName: String
        var rate: Int
        var lossless: Bool
        /// One codec frame, in seconds: the length may be off by at most this.
        var frameSeconds: Double
        /// Codec delay the format cannot tell a decoder to drop (LAME's in an MP3 stream).
        var delaySeconds: Double = 0
        var description: String { query }
    }

    static let cases: [Case] = [
        Case(query: "container=ogg", fileExtension: "ogg", contentType: "audio/ogg; codecs=opus", codecName: "opus", rate: 16000, lossless: false, frameSeconds: 0.02),
        Case(query: "container=ogg&codec=vorbis&rate=44100&bitrate=96k", fileExtension: "ogg", contentType: "audio/ogg; codecs=vorbis", codecName: "vorbis", rate: 44100, lossless: false, frameSeconds: 2048.0 / 44100),
        Case(query: "container=ogg&codec=flac", fileExtension: "ogg", contentType: "audio/ogg; codecs=flac", codecName: "flac", rate: 16000, lossless: true, frameSeconds: 0.1),
        Case(query: "container=webm&rate=48000&bitrate=48000", fileExtension: "webm", contentType: "audio/webm; codecs=opus", codecName: "opus", rate: 48000, lossless: false, frameSeconds: 0.02),
        Case(query: "container=flac&rate=48000", fileExtension: "flac", contentType: "audio/flac", codecName: "flac", rate: 48000, lossless: true, frameSeconds: 0.1),
        Case(query: "container=mp3&rate=24000", fileExtension: "mp3", contentType: "audio/mpeg", codecName: "mp3", rate: 24000, lossless: false, frameSeconds: 576.0 / 24000, delaySeconds: Self.mp3Delay(rate: 24000)),
    ]

    /// LAME's encoder delay at `rate` as libavcodec reports it, in seconds.
    static func mp3Delay(rate: Int) -> Double {
        let encoder = try? StreamingEncoder(AudioEncoding(container: .mp3, rate: rate, channels: 1))
        return Double(encoder?.codecDelay ?? 0) / Double(rate)
    }

    /// The tone's level in the PCM capture, the reference for the encoded ones (dB of its Goertzel amplitude).
    static func toneLevel(_ samples: [Float], rate: Int) -> Double {
        20 * log10(Goertzel.amplitude(samples, frequency: CaptureTonePlayer.frequency, rate: rate))
    }

    @Test("each container and codec of the card's tone decodes to its length, pitch and level", arguments: cases)
    func container(_ test: Case) async throws {
        let (_, app) = TestServer.make()
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        try await app.test(.live) { client in
            try await RealTime.retryingOnSteal {
                let wav = try await client.execute(uri: "/v1/capture?container=wav&seconds=2&rate=\(test.rate)", method: .get)
                let (_, pcm) = try WAVFile.read(Array(buffer: wav.body))
                let reference = Self.toneLevel(Array(pcm.dropFirst(test.rate / 2)), rate: test.rate)

                let response = try await client.execute(uri: "/v1/capture?\(test.query)&seconds=2", method: .get)
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == test.contentType)
                let bytes = Array(buffer: response.body)
                let decoded = try FFmpegTool.withFile(bytes, fileExtension: test.fileExtension) { path in
                    let stream = FFmpegTool.audioStream(try FFmpegTool.probe(path))
                    #expect(stream["codec_name"] as? String == test.codecName)
                    // Opus decodes at 48 kHz whatever rate it was encoded at (the header's rate is informational).
                    #expect(Int(stream["sample_rate"] as? String ?? "") == (test.codecName == "opus" ? 48000 : test.rate))
                    #expect(stream["channels"] as? Int == 1)
                    return try FFmpegTool.decode(path)
                }
                // An MP3 stream has no LAME tag to tell the decoder the encoder's delay: it decodes that much longer.
                try SignalCheckFailure.require(abs(decoded.seconds - 2 - test.delaySeconds) <= test.frameSeconds, "\(test): \(decoded.seconds) s")
                let measured = Array(decoded.mono.dropFirst(decoded.rate / 2))
                let pitch = Goertzel.dominantFrequency(measured, rate: decoded.rate, near: CaptureTonePlayer.frequency)
                try SignalCheckFailure.require(abs(pitch - CaptureTonePlayer.frequency) < 1, "\(test): \(pitch) Hz")
                let level = Self.toneLevel(measured, rate: decoded.rate)
                RealTime.log(
                    "\(test.query): \(bytes.count) bytes, \(decoded.seconds) s decoded (+\(test.delaySeconds) s codec delay expected), pitch \(pitch) Hz, tone \(level - reference) dB against PCM")
                try SignalCheckFailure.require(abs(level - reference) <= (test.lossless ? 1 : 2), "\(test): tone at \(level) dB, PCM \(reference) dB")
            }
        }
    }

    @Test("one encoder for every client of a setting; a late joiner gets the headers and a stream that decodes")
    func shared() async throws {
        let (server, app) = TestServer.make()
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        try await app.test(.live) { _ in
            let hub = server.engine.captureHub
            let encoding = AudioEncoding(container: .ogg, rate: 16000, channels: 1)
            let key = CaptureEncoder.Key(encoding: encoding, processing: VoiceProcessing())
            let first = EncodedListener(capacity: 400, rate: 16000)
            let encoder = try hub.encoders.join(key, listener: first, limitFrames: nil, chunkMilliseconds: 20, hub: hub)
            var early: [UInt8] = []
            // About a second of pages before the second client joins.
            while early.count < 3000, case .piece(let bytes)? = await first.next() { early += Array(buffer: bytes) }
            let listeners = (0..<20).map { _ in EncodedListener(capacity: 400, rate: 16000) }
            for listener in listeners {
                #expect(try hub.encoders.join(key, listener: listener, limitFrames: nil, chunkMilliseconds: 20, hub: hub) === encoder)
            }
            #expect(hub.encoders.count == 1)
            #expect(encoder.listenerCount == 21)
            // One capture subscriber (the encoder's) serves all of them.
            #expect(hub.subscribers.isEmpty)
            #expect(server.engine.captureHub.registry.withLock { $0.groups.count } == 1)
            #expect(server.engine.captureHub.registry.withLock { $0.groups[0].subscribers.count } == 1)
            var late: [UInt8] = []
            while late.count < 12000, case .piece(let bytes)? = await listeners[0].next() { late += Array(buffer: bytes) }
            #expect(late.starts(with: Array("OggS".utf8)))
            #expect(late.count > 100 && late[28..<36].elementsEqual(Array("OpusHead".utf8)))
            let decoded = try FFmpegTool.decode(late, fileExtension: "ogg")
            #expect(decoded.seconds > 1, "\(decoded.seconds) s")
            let pitch = Goertzel.dominantFrequency(decoded.mono, rate: 48000, near: CaptureTonePlayer.frequency)
            #expect(abs(pitch - CaptureTonePlayer.frequency) < 1, "\(pitch) Hz")
            for listener in listeners + [first] { hub.encoders.leave(encoder, listener: listener) }
            #expect(hub.encoders.count == 0)
            #expect(await Poll.until(seconds: 3) { hub.registry.withLock { $0.groups.isEmpty } } != nil)
        }
    }

    @Test("format=opus: start says codec, rate, channels and pre-skip; the packets decoded one by one are a continuous tone")
    func webSocketOpus() async throws {
        let (_, app) = TestServer.make()
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        try await app.test(.live) { client in
            try await RealTime.retryingOnSteal {
                // 64 kbps, not the default 24: the fixture's tone carries white noise at -31 dB, and
                // at 24 kbps libopus alone (the same tone, resampled and encoded offline, no capture)
                // moves the tone's phase between 20 ms windows by up to 0.35 rad (median 0.14, over
                // 0.2 in 11 of 40 noise seeds), so a bound there cannot tell a capture glitch from the
                // codec. At 64 kbps the codec's worst over those seeds is 0.021 rad, the noise's own floor.
                let stream = try await CaptureClient.receive(client, "format=opus&rate=16000&chunk_ms=20&bitrate=64k", seconds: 10) {
                    $0.binaryChunkSizes.count >= 150
                }
                let start = try JSONSerialization.jsonObject(with: Data((stream.start ?? "").utf8)) as? [String: Any] ?? [:]
                #expect(start["codec"] as? String == "opus")
                #expect(start["format"] as? String == "opus")
                #expect(start["rate"] as? Int == 16000)
                #expect(start["channels"] as? Int == 1)
                #expect(start["chunk_ms"] as? Int == 20)
                #expect(start["pre_skip"] as? Int == 312)
                #expect(start["bitrate"] as? Int == 64000)
                // libavcodec's Opus decoders give 48 kHz whatever the packets were encoded at.
                let decoder = try PacketDecoder(rate: 16000, channels: 1)
                var samples: [Float] = []
                var offset = 0
                for size in stream.binaryChunkSizes {
                    let packet = Array(stream.binary[offset..<(offset + size)])
                    offset += size
                    let decoded = try decoder.decode(packet)
                    #expect(decoded.count == 960, "one packet is 20 ms")
                    samples += decoded
                }
                // After the decoder's pre-skip and the tone's start: one continuous tone, no jumps in phase.
                let measured = Array(samples.dropFirst(48000))
                let pitch = Goertzel.dominantFrequency(measured, rate: 48000, near: CaptureTonePlayer.frequency)
                try SignalCheckFailure.require(abs(pitch - CaptureTonePlayer.frequency) < 1, "\(pitch) Hz")
                let report = PhaseContinuity.check(measured, frequency: CaptureTonePlayer.frequency, rate: 48000, windowMilliseconds: 20)
                RealTime.log(String(format: "opus packets: phase jump %.3f rad at sample %d, %d gaps", report.maxPhaseJump, report.maxPhaseJumpSample ?? -1, report.gaps.count))
                // Five times the codec's own worst at this bitrate.
                try SignalCheckFailure.require(report.gaps.isEmpty && report.isContinuous(maxJump: 0.1), "\(report)")
            }
        }
    }

    @Test("bad combinations answer 400 with a JSON error naming the parameter", arguments: [
        ("format=opus&channels=3", "channels"), ("container=ogg&codec=mp3", "codec"), ("format=opus&chunk_ms=25", "chunk_ms"),
        ("container=mp3&bitrate=999k", "bitrate"), ("container=ogg&bitrate=1k", "bitrate"), ("container=flac&bitrate=64k", "bitrate"),
        ("container=avi", "container"), ("codec=opus", "codec"), ("format=opus", "format"), ("container=webm&codec=vorbis", "codec"),
    ])
    func badCombinations(query: String, parameter: String) async throws {
        let (_, app) = TestServer.make()
        try await app.test(.live) { client in
            let response = try await client.execute(uri: "/v1/capture?\(query)", method: .get)
            #expect(response.status == .badRequest, "\(query)")
            #expect(response.headers[.contentType] == "application/json")
            let error = response.json["error"] as? [String: Any] ?? [:]
            #expect(error["code"] as? String == "bad_parameter")
            #expect((error["message"] as? String)?.contains("'\(parameter)'") == true, "\(query): \(error)")
        }
    }
}
