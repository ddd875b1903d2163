import AudioGateCore
@testable import AudioGateServer
import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@Suite("capture over HTTP", .serialized)
struct CaptureHTTPTests {
    @Test("container=wav&seconds=2 is a valid WAV of exactly 2 s that Python's wave reads")
    func wav() async throws {
        let (_, app) = TestServer.make()
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        try await app.test(.live) { client in
            let response = try await client.execute(uri: "/v1/capture?container=wav&seconds=2", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "audio/wav")
            let bytes = Array(buffer: response.body)
            #expect(bytes.count == 44 + 2 * 16000 * 2)
            let header = try WAVHeader.parse(bytes)
            #expect(header.dataByteCount == 2 * 16000 * 2)
            let (format, samples) = try WAVFile.read(bytes)
            #expect(format == AudioFormat(rate: 16000, channels: 1, sampleFormat: .s16le))
            #expect(samples.count == 32000)
            let frequency = Goertzel.dominantFrequency(Array(samples.dropFirst(8000)), rate: 16000, near: 1000)
            #expect(abs(frequency - 1000) < 1)

            let path = NSTemporaryDirectory() + "audiogate-capture-\(UUID().uuidString).wav"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let status = TestCard.run(
                "python3", "-c",
                "import sys, wave; w = wave.open(sys.argv[1]); assert w.getnframes() == 32000 and w.getframerate() == 16000",
                path)
            #expect(status == 0)
        }
    }

    @Test("raw at 24 kHz for 1.5 s has exactly the right length and type")
    func raw() async throws {
        let (_, app) = TestServer.make()
        try await app.test(.live) { client in
            let response = try await client.execute(
                uri: "/v1/capture?rate=24000&seconds=1.5&format=f32le&channels=2", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/octet-stream")
            #expect(response.body.readableBytes == 36000 * 2 * 4)
        }
    }

    @Test("bad parameters answer 400 with a JSON error naming the parameter", arguments: [
        "rate=12345", "chunk_ms=0", "format=mp3", "channels=7", "container=avi", "seconds=-3",
    ])
    func badParameters(query: String) async throws {
        let (_, app) = TestServer.make()
        try await app.test(.live) { client in
            let response = try await client.execute(uri: "/v1/capture?\(query)", method: .get)
            #expect(response.status == .badRequest)
            #expect(response.headers[.contentType] == "application/json")
            let error = response.json["error"] as? [String: Any] ?? [:]
            #expect(error["code"] as? String == "bad_parameter")
            #expect((error["message"] as? String)?.contains(String(query.prefix { $0 != "=" })) == true)
        }
    }

    @Test("status and metrics show capture subscribers, drops and the send delay")
    func statusAndMetrics() async throws {
        let (server, app) = TestServer.make()
        try await app.test(.live) { client in
            // The test client has one connection: look at the hub while the stream runs.
            async let stream = client.execute(uri: "/v1/capture?rate=8000&seconds=1.5", method: .get)
            #expect(await Poll.until(seconds: 3) { server.engine.captureHub.subscriberCount == 1 } != nil)
            let clients = server.engine.captureHub.clientStatus
            #expect(clients.first?.rate == 8000)
            #expect(clients.first?.transport == "http")
            #expect(server.engine.captureHub.formatStatus == [.init(rate: 8000, channels: 1, format: "s16le", subscribers: 1)])
            _ = try await stream
            let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
            #expect(metrics.contains("audiogate_capture_subscribers 0"))
            #expect(metrics.contains("# TYPE audiogate_capture_send_delay_seconds histogram"))
            let sent = metrics.split(separator: "\n").first { $0.hasPrefix("audiogate_capture_send_delay_seconds_count ") }
            let everyChunk = metrics.split(separator: "\n").first { $0.hasPrefix(#"audiogate_capture_send_delay_seconds_bucket{le="+Inf"} "#) }
            #expect(sent.flatMap { Int($0.split(separator: " ")[1]) }.map { $0 > 0 } == true, "\(sent ?? "no count")")
            #expect(everyChunk?.split(separator: " ").last == sent?.split(separator: " ").last)
            #expect(metrics.contains("audiogate_capture_dropped_ms_total"))
            let status = try await client.execute(uri: "/v1/status", method: .get)
            let capture = status.json["capture"] as? [String: Any] ?? [:]
            #expect(capture["subscribers"] as? Int == 0)
            #expect(capture["clients"] as? [Any] != nil)
            #expect(capture["formats"] as? [Any] != nil)
            #expect(capture["lost_ms"] != nil)
            let delay = capture["send_delay"] as? [String: Any] ?? [:]
            #expect((delay["count"] as? Int ?? 0) >= 70)
            #expect(delay["p99_ms"] != nil)
        }
    }
}
