import AudioGateCore
import AudioGateTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` of the real server binary in the middle of a recording, then a restart.
@Suite("recordings survive a crash", .serialized)
struct RecordingCrashTests {
    /// Starts `audiogate serve` on the test card and waits for `/healthz`.
    static func serve(port: Int, data: String) async throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestServer.binary)
        process.arguments = ["serve", "--device", TestCard.device, "--port", "\(port)", "--data-dir", data, "--log-level", "warning"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let up = await Poll.until(seconds: 15) { (try? Curl.request(port: port, path: "/healthz").status) == 200 }
        try #require(up != nil, "the server did not come up")
        return process
    }

    static func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    @Test("after kill -9 every recording is listed, complete segments intact, the cut one repaired and playable")
    func killNine() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: TestServer.binary), "build the server first: swift build")
        let data = RecordingFixtures.temporaryDirectory("crash")
        let port = 20000 + Int(getpid() % 20000)
        let first = try await Self.serve(port: port, data: data)
        let created = try Curl.request(port: port, path: "/v1/recordings", method: "POST", body: #"{"segment_seconds":1,"name":"crash"}"#)
        #expect(created.status == 201)
        let id = try #require(Self.json(created.body)["id"] as? String)
        let finished = try Curl.request(port: port, path: "/v1/recordings", method: "POST", body: #"{"max_seconds":0.5}"#)
        let finishedID = try #require(Self.json(finished.body)["id"] as? String)
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }
        // Killed in the middle of the third segment, however long the device took to start.
        var asked = Date.distantPast
        let reached = await Poll.until(seconds: 20) {
            // One request each 200 ms: the poll itself must not load the machine under test.
            guard Date().timeIntervalSince(asked) > 0.2 else { return false }
            asked = Date()
            let segments = Self.json((try? Curl.request(port: port, path: "/v1/recordings/\(id)").body) ?? "").objects("segments")
            return segments.count == 3 && (segments[2].int("frames") ?? 0) >= 3200
        }
        try #require(reached != nil, "the recording did not reach its third segment")
        kill(first.processIdentifier, SIGKILL)
        first.waitForExit()

        // Before any repair the open segment is already a valid WAV up to its last header flush.
        let folder = data + "/recordings/" + id
        let files = RecordingFixtures.files(under: folder).filter { $0.hasSuffix(".wav") }
        try #require(files.count >= 2, "files \(files)")
        let cut = try [UInt8](Data(contentsOf: URL(fileURLWithPath: folder + "/" + files.last!)))
        let header = try WAVHeader.parse(cut)
        #expect(header.dataOffset + (header.dataByteCount ?? 0) <= cut.count)

        let second = try await Self.serve(port: port, data: data)
        defer {
            second.terminate()
            second.waitForExit()
        }
        let list = Self.json(try Curl.request(port: port, path: "/v1/recordings").body)
        let listed = list.objects("recordings")
        #expect(Set(listed.compactMap { $0["id"] as? String }) == [id, finishedID])
        #expect(listed.first { $0["id"] as? String == finishedID }?["state"] as? String == "completed")

        let details = Self.json(try Curl.request(port: port, path: "/v1/recordings/\(id)").body)
        #expect(details["state"] as? String == "interrupted")
        let segments = details.objects("segments")
        let frames = segments.compactMap { $0.int("frames") }
        RealTime.log("after kill -9: \(frames) frames per segment, \(details["duration_seconds"] ?? "-") s kept")
        #expect(frames.dropLast().allSatisfy { $0 == 16000 })
        #expect(segments.dropLast().allSatisfy { $0["repaired"] as? Bool == false })
        #expect(segments.last?["repaired"] as? Bool == true)
        #expect(segments.allSatisfy { $0["complete"] as? Bool == true })
        let total = details.int("frames") ?? 0
        #expect(total == frames.reduce(0, +))
        #expect(total > 16000 * 2 && total < 16000 * 3, "kept \(total) frames of about 2.2-2.7 s")

        // Every segment downloads as a WAV holding exactly its listed frames.
        for (index, count) in frames.enumerated() {
            let file = data + "/download.wav"
            let status = TestCard.run("curl", "-sf", "-o", file, "http://127.0.0.1:\(port)/v1/recordings/\(id)/segments/\(index).wav")
            #expect(status == 0)
            let wav = try RecordingFixtures.readWAV([UInt8](Data(contentsOf: URL(fileURLWithPath: file))))
            #expect(wav.samples.count == count, "segment \(index)")
        }
    }

    @Test("FLAC and Opus: the segment being written downloads and decodes; after kill -9 it is repaired, listed as such and decodes to its listed frames", arguments: ["flac", "opus"])
    func killNineEncoded(codec: String) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: TestServer.binary), "build the server first: swift build")
        let data = RecordingFixtures.temporaryDirectory("crash-\(codec)")
        let port = 20000 + Int(getpid() % 20000) + (codec == "flac" ? 1 : 2)
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        let first = try await Self.serve(port: port, data: data)
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }
        let created = try Curl.request(
            port: port, path: "/v1/recordings", method: "POST", body: #"{"segment_seconds":3,"codec":"\#(codec)"}"#)
        #expect(created.status == 201, "\(created.body)")
        let id = try #require(Self.json(created.body)["id"] as? String)
        #expect(Self.json(created.body)["codec"] as? String == codec)
        // A whole first segment, then more than one Ogg page (1 s) of the second.
        var live: [[String: Any]] = []
        var asked = Date.distantPast
        let reached = await Poll.until(seconds: 20) {
            // One request each 200 ms: the poll itself must not load the machine under test.
            guard Date().timeIntervalSince(asked) > 0.2 else { return false }
            asked = Date()
            live = Self.json((try? Curl.request(port: port, path: "/v1/recordings/\(id)").body) ?? "").objects("segments")
            return live.count == 2 && (live[1].int("frames") ?? 0) >= 30000
        }
        try #require(reached != nil, "the recording did not reach 1.9 s into its second segment")

        // The open segment is readable while it is written, up to its last whole frame or page.
        let open = try #require(live.last)
        #expect(open["complete"] as? Bool == false && (open["url"] as? String)?.hasSuffix(".\(codec)") == true)
        let partial = data + "/partial.\(codec)"
        let fetched = TestCard.run("curl", "-sf", "-o", partial, "http://127.0.0.1:\(port)\(open["url"] as? String ?? "")")
        #expect(fetched == 0)
        let partialSamples = try FFmpegTool.decode(partial)
        #expect(partialSamples.samples.count > partialSamples.rate / 2, "the open segment decodes to \(partialSamples.samples.count) samples")
        kill(first.processIdentifier, SIGKILL)
        first.waitForExit()

        let second = try await Self.serve(port: port, data: data)
        defer {
            second.terminate()
            second.waitForExit()
        }
        let details = Self.json(try Curl.request(port: port, path: "/v1/recordings/\(id)").body)
        #expect(details["state"] as? String == "interrupted")
        #expect(details["codec"] as? String == codec)
        let segments = details.objects("segments")
        RealTime.log("\(codec) after kill -9: \(segments.map { $0.int("frames") ?? -1 }) frames, \(details["bytes"] ?? "-") bytes")
        try #require(segments.count == 2, "\(segments.count) segments")
        #expect(segments[0].int("frames") == 48000 && segments[0]["repaired"] as? Bool == false)
        #expect(segments[1]["repaired"] as? Bool == true && segments[1]["complete"] as? Bool == true)
        #expect((segments[1].int("frames") ?? 0) > 8000)
        for segment in segments {
            let file = data + "/download.\(codec)"
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            curl.arguments = ["curl", "-sf", "-D", data + "/headers", "-o", file, "http://127.0.0.1:\(port)\(segment["url"] as? String ?? "")"]
            try curl.run()
            curl.waitForExit()
            #expect(curl.terminationStatus == 0)
            let headers = (try? String(contentsOfFile: data + "/headers", encoding: .utf8)) ?? ""
            #expect(headers.lowercased().contains("content-type: \(codec == "flac" ? "audio/flac" : "audio/ogg")"), "\(headers)")
            let decoded = try FFmpegTool.decode(file)
            #expect(decoded.rate == (codec == "flac" ? 16000 : 48000) && decoded.channels == 1)
            let frames = segment.int("frames") ?? 0
            let expected = codec == "flac" ? frames : frames * 3
            #expect(abs(decoded.samples.count - expected) <= 3, "segment \(segment["index"] ?? "-"): decoded \(decoded.samples.count), listed \(frames)")
            let pitch = Goertzel.dominantFrequency(Array(decoded.samples.suffix(decoded.rate / 2)), rate: decoded.rate, near: CaptureTonePlayer.frequency)
            #expect(abs(pitch - CaptureTonePlayer.frequency) < 1, "segment \(segment["index"] ?? "-"): pitch \(pitch) Hz")
        }
        // Ranges work on the stored file; the repaired recording converts (its segments decoded and
        // encoded again), and exports as WAV to its listed length.
        let range = try Curl.request(port: port, path: "/v1/recordings/\(id)/segments/0.\(codec)", headers: ["Range: bytes=0-99"])
        #expect(range.status == 206 && range.headers.lowercased().contains("content-range: bytes 0-99/"), "\(range.headers)")
        for (path, type) in [("segments/0.mp3", "audio/mpeg"), ("audio.m4a", "audio/mp4")] {
            let converted = try Curl.request(port: port, path: "/v1/recordings/\(id)/\(path)")
            #expect(converted.status == 200 && converted.headers.lowercased().contains("content-type: \(type)"), "\(path): \(converted.status) \(converted.headers)")
        }
        let whole = data + "/whole.wav"
        #expect(TestCard.run("curl", "-sf", "-o", whole, "http://127.0.0.1:\(port)/v1/recordings/\(id)/audio.wav") == 0)
        let exported = try RecordingFixtures.readWAV([UInt8](Data(contentsOf: URL(fileURLWithPath: whole))))
        #expect(exported.samples.count == details.int("frames"), "exported \(exported.samples.count), listed \(details.int("frames") ?? -1)")
        if codec == "opus" {
            let ogg = try Curl.request(port: port, path: "/v1/recordings/\(id)/segments/0.ogg", headers: ["Range: bytes=0-3"])
            #expect(ogg.status == 206 && ogg.body == "OggS", "\(ogg.body)")
        }
    }
}
