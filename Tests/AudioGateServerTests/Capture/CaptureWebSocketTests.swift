import AudioGateCore
@testable import AudioGateServer
import AudioGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import HummingbirdWSTesting
import Testing

@Suite("capture over WebSocket", .serialized)
struct CaptureWebSocketTests {
    @Test("a 1 kHz tone played at 48 kHz arrives as 1 kHz at 8, 16, 24 and 44.1 kHz")
    func toneAtEveryRate() async throws {
        let (_, app) = TestServer.make()
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        try await app.test(.live) { client in
            try await RealTime.retryingOnSteal {
                try await withThrowingTaskGroup(of: (Int, CapturedStream).self) { group in
                    for rate in [8000, 16000, 24000, 44100] {
                        group.addTask {
                            // Skip the first 0.5 s so the tone is surely playing in what is measured.
                            let stream = try await CaptureClient.receive(client, "rate=\(rate)", seconds: 10) {
                                $0.binary.count >= rate * 2 * 5 / 2
                            }
                            return (rate, stream)
                        }
                    }
                    for try await (rate, stream) in group {
                        #expect(stream.start == "{\"type\":\"start\",\"rate\":\(rate),\"channels\":1,\"format\":\"s16le\",\"chunk_ms\":20,\"processing\":{\"aec\":false,\"ns\":false,\"agc\":false,\"vad\":false}}")
                        let frames = rate / 50
                        #expect(stream.binaryChunkSizes.allSatisfy { $0 == frames * 2 })
                        let samples = Array(stream.binary.samples(.s16le).dropFirst(rate / 2))
                        let frequency = Goertzel.dominantFrequency(samples, rate: rate, near: CaptureTonePlayer.frequency)
                        try SignalCheckFailure.require(abs(frequency - CaptureTonePlayer.frequency) < 1, "rate \(rate): \(frequency) Hz")
                        try SignalCheckFailure.require(Goertzel.power(samples, frequency: 1000, rate: rate) > -12, "rate \(rate): tone power \(Goertzel.power(samples, frequency: 1000, rate: rate)) dB")
                    }
                }
            }
        }
    }

    @Test("over 10 s the frame count matches the rate, seq has no gap, and JSON carries the same audio as binary")
    func tenSeconds() async throws {
        let (_, app) = TestServer.make()
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        try await app.test(.live) { client in
            try await RealTime.retryingOnSteal {
                async let binary = CaptureClient.receive(client, "rate=16000&chunk_ms=20", seconds: 11)
                async let json = CaptureClient.receive(client, "rate=16000&chunk_ms=20&encoding=json", seconds: 11)
                let (b, j) = try await (binary, json)

                // Frames received in the 10 s after the first chunk, by arrival time.
                let chunks = j.audio.filter { $0.arrivedMs - j.audio[0].arrivedMs < 10_000 }
                let frames = chunks.reduce(0) { $0 + $1.pcm.count / 2 }
                let arrivalGaps = zip(j.audio, j.audio.dropFirst()).map { $1.arrivedMs - $0.arrivedMs }
                let tsGaps = zip(j.audio, j.audio.dropFirst()).map { $1.timestampMs - $0.timestampMs }
                let bigGaps = arrivalGaps.enumerated().filter { $0.element > 100 }.map { "\($0.offset):\(Int($0.element))" }
                try SignalCheckFailure.require(abs(Double(frames) - 160_000) <= 160_000 * 0.005, "\(frames) frames in 10 s; total chunks \(j.audio.count); big arrival gaps \(bigGaps); max ts gap \(tsGaps.max() ?? 0); span ts \((j.audio.last?.timestampMs ?? 0) - (j.audio.first?.timestampMs ?? 0)) arrival span \((j.audio.last?.arrivedMs ?? 0) - (j.audio.first?.arrivedMs ?? 0))")
                #expect(j.audio.enumerated().allSatisfy { $0.element.seq == UInt64($0.offset) }, "seq has a gap")
                #expect(j.events(ofType: "overrun").isEmpty)
                // timestamp_ms advances by the chunk length.
                let steps = zip(j.audio, j.audio.dropFirst()).map { $1.timestampMs - $0.timestampMs }
                // The clock follows the audio and time never runs backwards, from the first chunk on:
                // the test card's reported latency before libpulse's first timing update (50-120 ms
                // off, about 1.2 s in) does not date the audio. One correction is still allowed.
                let offBeat = steps.enumerated().filter { abs($0.element - 20) >= 1 }
                    .map { "\($0.offset):\(Int($0.element))" }
                #expect(offBeat.count <= 1 && steps.allSatisfy { $0 > 0 }, "timestamp steps off the 20 ms beat at \(offBeat)")
                // timestamp_ms is on the test's own CLOCK_MONOTONIC: the chunk ends before it arrives.
                let delays = j.audio.map { $0.arrivedMs - ($0.timestampMs + 20) }
                #expect(delays.allSatisfy { $0 > -2 && $0 < 500 }, "delays \(delays.min() ?? 0)...\(delays.max() ?? 0) ms")

                // Both clients share one stream: the JSON audio is a stretch of the binary audio.
                let jsonPCM = j.pcm
                let binaryPCM = b.binary
                let probe = Array(jsonPCM[0..<512])
                let offsets = (0...(binaryPCM.count - 512)).lazy.filter { $0 % 2 == 0 && Array(binaryPCM[$0..<($0 + 512)]) == probe }
                let offset = try #require(offsets.first, "JSON audio not found in the binary stream")
                let overlap = min(jsonPCM.count, binaryPCM.count - offset)
                #expect(overlap > 16000 * 2 * 8)
                #expect(Array(jsonPCM[0..<overlap]) == Array(binaryPCM[offset..<(offset + overlap)]))
            }
        }
    }

    @Test("three clients at three rates keep up while a stalled client only overruns itself")
    func stalledClient() async throws {
        let (server, app) = TestServer.make()
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        try await app.test(.live) { client in
            try await RealTime.retryingOnSteal {
                let residentBefore = CaptureMemory.residentBytes
                async let stalled = CaptureClient.receive(
                    client, "rate=48000&channels=2&format=f32le&encoding=json", seconds: 2, delayReading: 5)
                async let a = CaptureClient.receive(client, "rate=8000&encoding=json", seconds: 7)
                async let b = CaptureClient.receive(client, "rate=22050&encoding=json&chunk_ms=40", seconds: 7)
                async let c = CaptureClient.receive(client, "rate=44100&channels=2&encoding=json&chunk_ms=10", seconds: 7)
                // While the stalled client sleeps, its queue stays within its bound.
                try await Task.sleep(for: .seconds(4.5))
                let queued = server.engine.captureHub.subscribers.map(\.queuedMilliseconds)
                #expect(queued.allSatisfy { $0 <= 1000 }, "queued \(queued)")
                let growth = CaptureMemory.residentBytes - residentBefore
                #expect(growth < 40 << 20, "resident memory grew by \(growth >> 20) MiB")

                let (s, x, y, z) = try await (stalled, a, b, c)
                #expect(!s.events(ofType: "overrun").isEmpty, "the stalled client got no overrun")
                let dropped = s.events(ofType: "overrun").compactMap { $0["dropped_ms"] as? Double }.reduce(0, +)
                #expect(dropped >= 1000, "dropped \(dropped) ms")
                #expect(s.audio.enumerated().allSatisfy { $0.element.seq == UInt64($0.offset) })
                for (stream, chunkMs) in [(x, 20.0), (y, 40.0), (z, 10.0)] {
                    #expect(stream.events(ofType: "overrun").isEmpty)
                    #expect(stream.audio.enumerated().allSatisfy { $0.element.seq == UInt64($0.offset) })
                    #expect(Double(stream.audio.count) * chunkMs > 6500, "only \(stream.audio.count) chunks of \(chunkMs) ms")
                    let delays = stream.audio.map { $0.arrivedMs - ($0.timestampMs + chunkMs) }.sorted()
                    let p99 = delays[delays.count * 99 / 100]
                    // A debug build serving four in-process clients: when the stalled client wakes,
                    // encoding its 1 s backlog (384 KB/s of base64) delays the others' sends by up to
                    // a few hundred ms. The release figure (p99 12.6 ms for 100 clients) is measured by
                    // `make bench`; here "on time" means no client is held back for seconds.
                    #expect(p99 < 400, "p99 delay \(p99) ms at chunk \(chunkMs) ms")
                }
            }
        }
    }

    @Test("levels=true sends level events about every 50 ms")
    func levels() async throws {
        let (_, app) = TestServer.make()
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        try await app.test(.live) { client in
            let stream = try await CaptureClient.receive(client, "levels=true&encoding=json", seconds: 1.2)
            let levels = stream.events(ofType: "level")
            #expect(levels.count >= 15 && levels.count <= 30, "\(levels.count) level events in 1.2 s")
            let rms = levels.compactMap { $0["rms_dbfs"] as? Double }
            #expect(rms.last.map { $0 > -20 && $0 < 0 } == true, "rms \(rms)")
        }
    }

    @Test("music=true gets the last music message at once and each new one; other clients get none")
    func music() async throws {
        let (server, app) = TestServer.make()
        let hub = server.engine.captureHub
        let first = MusicMessage(player: "sendspin", playbackState: "playing", metadata: nil, timestampMs: 1).json()
        let second = MusicMessage(player: "sendspin", playbackState: "stopped", metadata: nil, timestampMs: 2).json()
        hub.announceMusic(first)
        try await app.test(.live) { client in
            async let plain = CaptureClient.receive(client, "levels=true&encoding=json", seconds: 1)
            let stream = try await CaptureClient.receive(client, "music=true&encoding=json", seconds: 5) { stream in
                let music = stream.events(ofType: "music")
                if music.count == 1 { hub.announceMusic(second) }
                return music.count >= 2
            }
            let states = stream.events(ofType: "music").map { $0["playback_state"] as? String }
            #expect(states == ["playing", "stopped"])
            #expect(stream.events(ofType: "music").first?["player"] as? String == "sendspin")
            #expect(first.hasPrefix(#"{"metadata":null,"player":"sendspin","playback_state":"playing","timestamp_ms":1"#))
            #expect(try await plain.events(ofType: "music").isEmpty)
        }
    }

    @Test("bad parameters refuse the upgrade with a 400 JSON error")
    func refusedUpgrade() async throws {
        let (_, app) = TestServer.make()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            for query in ["rate=12345", "chunk_ms=0", "format=mp3", "channels=7", "encoding=xml"] {
                // A refused upgrade closes its connection, so each attempt is a fresh client.
                let response = try Curl.request(port: port, path: "/v1/capture?\(query)", headers: Curl.upgrade)
                #expect(response.status == 400, "\(query)")
                #expect(response.headers.lowercased().contains("content-type: application/json"))
                let error = (try? JSONSerialization.jsonObject(with: Data(response.body.utf8))) as? [String: Any]
                let detail = error?["error"] as? [String: Any] ?? [:]
                #expect(detail["code"] as? String == "bad_parameter")
                let name = String(query.prefix { $0 != "=" })
                #expect((detail["message"] as? String)?.contains(name) == true, "\(detail)")
            }
            await #expect(throws: (any Error).self) {
                try await client.ws("/v1/capture?rate=12345") { _, _, _ in }
            }
        }
    }
}
