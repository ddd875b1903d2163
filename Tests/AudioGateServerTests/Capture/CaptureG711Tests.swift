import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import HummingbirdWSTesting
import Testing

/// `format=mulaw|alaw` on capture: a tone played into the test card comes back as 8 kHz G.711.
@Suite("capture as G.711", .serialized)
struct CaptureG711Tests {
    @Test("over the WebSocket, mulaw and alaw carry the tone at its pitch and at the s16le client's level, 160 bytes a 20 ms chunk")
    func webSocket() async throws {
        let (_, app) = TestServer.make()
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        try await app.test(.live) { client in
            try await RealTime.retryingOnSteal {
                try await withThrowingTaskGroup(of: (String, CapturedStream).self) { group in
                    // format=mulaw alone is enough: the rate defaults to G.711's 8000.
                    for query in ["rate=8000", "format=mulaw", "format=alaw&rate=8000&channels=1"] {
                        group.addTask {
                            let stream = try await CaptureClient.receive(client, query, seconds: 10) { $0.pcm.count >= 8000 * 5 / 2 * 2 }
                            return (query, stream)
                        }
                    }
                    var amplitudes: [String: Double] = [:]
                    for try await (query, stream) in group {
                        let format: SampleFormat = query.contains("mulaw") ? .mulaw : query.contains("alaw") ? .alaw : .s16le
                        #expect(stream.start?.contains("\"rate\":8000,\"channels\":1,\"format\":\"\(format.rawValue)\"") == true, "\(stream.start ?? "no start")")
                        #expect(stream.binaryChunkSizes.allSatisfy { $0 == 160 * format.bytesPerSample }, "\(query)")
                        let samples = Array(stream.binary.samples(format).dropFirst(4000))
                        let frequency = Goertzel.dominantFrequency(samples, rate: 8000, near: CaptureTonePlayer.frequency)
                        try SignalCheckFailure.require(abs(frequency - CaptureTonePlayer.frequency) < 1, "\(query): \(frequency) Hz")
                        amplitudes[format.rawValue] = Goertzel.amplitude(samples, frequency: CaptureTonePlayer.frequency, rate: 8000)
                    }
                    let reference = try #require(amplitudes["s16le"])
                    for law in ["mulaw", "alaw"] {
                        let difference = 20 * log10(try #require(amplitudes[law]) / reference)
                        RealTime.log("capture \(law): tone level \(String(format: "%+.2f", difference)) dB from s16le")
                        try SignalCheckFailure.require(abs(difference) < 0.5, "\(law) tone is \(difference) dB off the s16le client's")
                    }
                }
            }
        }
    }

    @Test("GET container=wav&format=alaw is a WAV with format tag 6 that ffmpeg decodes to the tone; raw mulaw is one byte a sample")
    func http() async throws {
        let (_, app) = TestServer.make()
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        try await app.test(.live) { client in
            let response = try await client.execute(uri: "/v1/capture?format=alaw&container=wav&seconds=2", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "audio/wav")
            let bytes = Array(buffer: response.body)
            #expect(bytes.count == 44 + 16000)
            #expect(bytes[20] == 6 && bytes[34] == 8)
            let path = NSTemporaryDirectory() + "audiogate-alaw-\(UUID().uuidString).wav"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            defer { try? FileManager.default.removeItem(atPath: path) }
            #expect(try FFmpegTool.probeStream(path: path)["codec_name"] as? String == "pcm_alaw")
            let decoded = try FFmpegTool.decode(path)
            #expect(decoded.rate == 8000 && decoded.channels == 1 && decoded.samples.count == 16000)
            let frequency = Goertzel.dominantFrequency(Array(decoded.samples.dropFirst(4000)), rate: 8000, near: CaptureTonePlayer.frequency)
            #expect(abs(frequency - CaptureTonePlayer.frequency) < 1)

            let raw = try await client.execute(uri: "/v1/capture?format=mulaw&seconds=1.5", method: .get)
            #expect(raw.status == .ok)
            #expect(raw.headers[.contentType] == "application/octet-stream")
            #expect(raw.body.readableBytes == 12000)
        }
    }

    @Test("G.711 at another rate or in stereo is a 400 naming the parameter, on HTTP and WebSocket", arguments: [
        ("format=mulaw&rate=16000", "rate"), ("format=alaw&rate=48000", "rate"), ("format=mulaw&channels=2", "channels"),
        ("format=ulaw", "format"), ("format=mulaw&container=ogg", "format"),
    ])
    func badCombinations(query: String, parameter: String) async throws {
        let (_, app) = TestServer.make()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            for headers in [[], Curl.upgrade] {
                let response = try Curl.request(port: port, path: "/v1/capture?\(query)", headers: headers)
                #expect(response.status == 400, "\(query)")
                let error = (try? JSONSerialization.jsonObject(with: Data(response.body.utf8))) as? [String: Any]
                let detail = error?["error"] as? [String: Any] ?? [:]
                #expect(detail["code"] as? String == "bad_parameter")
                #expect((detail["message"] as? String)?.contains("'\(parameter)'") == true, "\(detail)")
            }
        }
    }
}
