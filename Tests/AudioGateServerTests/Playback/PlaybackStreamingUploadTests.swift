import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// `curl -T - ... < pipe`: a chunked upload starts playing before it ends.
@Suite("playback streaming upload", .serialized)
struct PlaybackStreamingUploadTests {
    @Test("a chunked POST plays as its first bytes arrive and answers with the whole duration")
    func chunkedUploadPlaysEarly() async throws {
        let (server, app) = PlaybackServer.make()
        try await app.test(.live) { client in
            await TestServer.waitForPlayback(server)
            let port = try #require(client.port)
            let pcm = SampleConversion.encode(Signal.sine(frequency: 440, rate: 24000, seconds: 1, amplitude: 0.2), format: .s16le)
            let upload = try Curl.Upload(
                port: port, path: "/v1/playback?stream=chunked", contentType: "application/octet-stream", maxTime: 10)
            upload.write(pcm[0..<(pcm.count / 2)])
            let started = await Poll.until(seconds: 2) {
                (server.engine.mixer.existingStream("chunked")?.playedFrames ?? 0) > 0
            }
            #expect(started != nil, "nothing played while the upload was still open")
            upload.write(pcm[(pcm.count / 2)...])
            let (body, answer) = try await upload.finish()
            #expect(answer["duration_ms"] as? Int == 1000, "answer \(String(decoding: body, as: UTF8.self))")
            #expect(answer["stream"] as? String == "chunked")
        }
    }
}
