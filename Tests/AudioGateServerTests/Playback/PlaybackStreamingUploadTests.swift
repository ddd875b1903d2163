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
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "curl", "-s", "--max-time", "10", "-X", "POST", "-T", "-", "-H", "Content-Type: application/octet-stream",
                "http://127.0.0.1:\(port)/v1/playback?stream=chunked",
            ]
            let input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            input.fileHandleForWriting.write(Data(pcm[0..<(pcm.count / 2)]))
            let started = await Poll.until(seconds: 2) {
                (server.engine.mixer.existingStream("chunked")?.playedFrames ?? 0) > 0
            }
            #expect(started != nil, "nothing played while the upload was still open")
            input.fileHandleForWriting.write(Data(pcm[(pcm.count / 2)...]))
            try input.fileHandleForWriting.close()
            let body = output.fileHandleForReading.readDataToEndOfFile()
            for _ in 0..<200 where process.isRunning { try await Task.sleep(for: .milliseconds(10)) }
            let answer = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
            #expect(answer["duration_ms"] as? Int == 1000, "answer \(String(decoding: body, as: UTF8.self))")
            #expect(answer["stream"] as? String == "chunked")
        }
    }
}
