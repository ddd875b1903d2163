import AudioGateCore
import AudioGateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import AudioGateServer

/// Recordings on the test card: what is played into the card comes back in the files.
@Suite("recordings on the test card", .serialized)
struct RecordingLiveTests {
    @Test("30 s of a tone in 10 s segments: three segments of exactly rate × 10 frames, continuous across the joins, at the right pitch; a second format records at the same time")
    func toneInSegments() async throws {
        // A device xrun (another process starving the sound server) breaks the tone whatever the
        // recorder does; the attempt is then run once more.
        for attempt in 1...2 {
            do {
                try await toneAttempt()
                return
            } catch let failure as SignalCheckFailure where attempt == 1 && failure.message.hasPrefix("device xrun") {
                RealTime.log("\(failure.message); retrying once")
            }
        }
    }

    func toneAttempt() async throws {
        try await RealTime.retryingOnSteal {
            let data = RecordingFixtures.temporaryDirectory()
            let (server, app) = TestServer.make(TestServer.configuration { $0.dataDirectory = data })
            try await app.test(.live) { client in
                await TestServer.waitForPlayback(server)
                let tone = PlaybackHTTPTests.wav(Signal.sine(frequency: 440, rate: 24000, seconds: 33, amplitude: 0.3), rate: 24000, channels: 1)
                let played = try await client.execute(
                    uri: "/v1/playback?stream=recording-tone", method: .post, headers: [.contentType: "audio/wav"],
                    body: ByteBuffer(bytes: tone))
                #expect(played.status == .ok)
                defer { _ = server.engine.mixer.allStreams.map { $0.clear() } }
                let heard = await Poll.until(seconds: 5) { server.engine.captureHub.lastLevel.rms > -25 }
                try #require(heard != nil, "the tone never reached the capture side")

                let speech = try await RecordingFixtures.start(client, #"{"segment_seconds":10,"max_seconds":30,"name":"tone"}"#)
                let wide = try await RecordingFixtures.start(
                    client, #"{"rate":48000,"channels":2,"format":"f32le","segment_seconds":4,"max_seconds":10}"#)
                let listed = try await client.execute(uri: "/v1/recordings", method: .get).json.objects("recordings")
                #expect(Set(listed.compactMap { $0["id"] as? String }) == [speech, wide])

                // Either direction: a playback underrun leaves a hole in what the card plays, and the
                // pulse plugin does not always report one, so a buffer found played out counts too.
                let deviceXruns = {
                    let playback = server.engine.playback.monitor.snapshot
                    return server.engine.capture.monitor.snapshot.xruns + playback.xruns + playback.ranEmpty
                }
                let xrunsBefore = deviceXruns()
                let details = try await RecordingFixtures.waitUntilFinished(client, speech, seconds: 40)
                #expect(details["state"] as? String == "completed")
                let xruns = deviceXruns() - xrunsBefore
                let gaps = details.objects("gaps")
                try SignalCheckFailure.require(xruns == 0, "device xrun: \(xruns) during the recording, written as gaps \(gaps)")
                let segments = details.objects("segments")
                try SignalCheckFailure.require(
                    segments.map { $0.int("frames") } == [160_000, 160_000, 160_000], "segment frames \(segments.map { $0["frames"] ?? "-" })")
                #expect(segments.map { $0.int("start_frame") } == [0, 160_000, 320_000])
                try SignalCheckFailure.require(gaps.isEmpty, "gaps \(gaps)")
                var joined: [Float] = []
                for index in 0..<3 {
                    let wav = try RecordingFixtures.readWAV(try await RecordingFixtures.segment(client, speech, index))
                    #expect(wav.format == AudioFormat(rate: 16000, channels: 1, sampleFormat: .s16le))
                    #expect(wav.samples.count == 160_000)
                    joined += wav.samples
                }
                let report = PhaseContinuity.check(joined, frequency: 440, rate: 16000)
                RealTime.log("recording 30 s: phase jump \(report.maxPhaseJump) rad, gaps \(report.gaps.count), offset \(report.frequencyOffsetHz) Hz")
                try SignalCheckFailure.require(report.gaps.isEmpty, "gaps at samples \(report.gaps)")
                try SignalCheckFailure.require(report.maxPhaseJump < 0.2, "phase jumps by \(report.maxPhaseJump) rad at \(report.maxPhaseJumpSample ?? -1)")
                let pitch = Goertzel.dominantFrequency(joined, rate: 16000, near: 440)
                try SignalCheckFailure.require(abs(pitch - 440) < 1, "pitch \(pitch) Hz")

                let other = try await RecordingFixtures.waitUntilFinished(client, wide, seconds: 5)
                #expect(other["state"] as? String == "completed")
                #expect(other.objects("segments").map { $0.int("frames") } == [192_000, 192_000, 96_000])
                let first = try RecordingFixtures.readWAV(try await RecordingFixtures.segment(client, wide, 0))
                #expect(first.format == AudioFormat(rate: 48000, channels: 2, sampleFormat: .f32le))
                let left = Signal.channel(first.samples, channels: 2, index: 0)
                try SignalCheckFailure.require(abs(Goertzel.dominantFrequency(left, rate: 48000, near: 440) - 440) < 1, "48 kHz pitch")
            }
        }
    }

    @Test("a device outage is recorded as silence of its length and listed as a gap; the timeline stays true")
    func deviceGap() async throws {
        let data = RecordingFixtures.temporaryDirectory()
        let (server, app) = TestServer.make(TestServer.configuration { $0.dataDirectory = data })
        defer { if !TestCard.isRunning { TestCard.start() } }
        try await app.test(.live) { client in
            #expect(await Poll.until(seconds: 5) { server.engine.capture.monitor.snapshot.state == .running } != nil)
            let started = MonotonicClock.nowMilliseconds()
            let id = try await RecordingFixtures.start(client, #"{"segment_seconds":2}"#)
            try await Task.sleep(for: .seconds(1))
            let lostBefore = server.engine.captureHub.lostMilliseconds
            TestCard.kill()
            #expect(await Poll.until(seconds: 10) { server.engine.captureHub.isDeviceLost } != nil)
            try await Task.sleep(for: .seconds(1))
            TestCard.start()
            #expect(await Poll.until(seconds: 10) { !server.engine.captureHub.isDeviceLost } != nil)
            // A restarted sound server takes a moment to deliver audio; wait for a second of it.
            let deadline = MonotonicClock.nowMilliseconds() + 10_000
            while MonotonicClock.nowMilliseconds() < deadline {
                let now = try await RecordingFixtures.details(client, id)
                if let gap = now.objects("gaps").first, let start = gap.int("start_frame"), let frames = gap.int("frames"),
                    (now.int("frames") ?? 0) > start + frames + 16000
                {
                    break
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            let stop = try await client.execute(uri: "/v1/recordings/\(id)/stop", method: .post)
            let stopped = MonotonicClock.nowMilliseconds()
            #expect(stop.status == .ok)
            let details = stop.json
            #expect(details["state"] as? String == "stopped")
            #expect(details["stop_reason"] as? String == "request")
            let gaps = details.objects("gaps")
            let lostMs = server.engine.captureHub.lostMilliseconds - lostBefore
            let gapMs = Double(gaps.compactMap { $0.int("frames") }.reduce(0, +)) / 16
            RealTime.log("device gap: \(gaps.count) gaps, \(gapMs) ms of silence; the hub lost \(lostMs) ms")
            #expect(gaps.first?["reason"] as? String == "device_lost")
            #expect(abs(gapMs - lostMs) < 100, "gap \(gapMs) ms, lost \(lostMs) ms")
            #expect(gapMs > 800)
            let recordedMs = Double(details.int("frames") ?? 0) / 16
            let wallMs = stopped - started
            #expect(abs(recordedMs - wallMs) < 400, "recorded \(recordedMs) ms over \(wallMs) ms")
            // The silence is in the file where the gap says.
            let gap = try #require(gaps.first)
            let segments = details.objects("segments")
            var joined: [Float] = []
            for index in segments.indices { joined += try RecordingFixtures.readWAV(try await RecordingFixtures.segment(client, id, index)).samples }
            let start = try #require(gap.int("start_frame"))
            let frames = try #require(gap.int("frames"))
            #expect(joined.count == details.int("frames"))
            #expect(joined[start..<(start + frames)].allSatisfy { $0 == 0 })
        }
    }

    @Test("a finished recording is removed when it passes the retention time while the server runs, not before")
    func retentionWhileRunning() async throws {
        let data = RecordingFixtures.temporaryDirectory()
        try RecordingFixtures.writeFinished(in: data, id: "20200103-000000-expire", seconds: 1, age: 0)
        let (server, app) = TestServer.make(
            TestServer.configuration {
                $0.dataDirectory = data
                $0.retentionHours = 2.0 / 3600
            })
        try await app.test(.live) { _ in
            #expect(server.recordings.all.count == 1)
            let elapsed = await Poll.until(seconds: 10) { server.recordings.all.isEmpty }
            #expect(elapsed != nil, "the recording outlived its retention time")
            // Written just before the server started: it expires about 2 s in.
            #expect((elapsed ?? 0) > 1.0, "removed after \(elapsed ?? 0) s, before its time")
        }
    }

    @Test("retention removes recordings older than the retention time; the disk cap removes the oldest finished one, then fails the recording cleanly")
    func retentionAndDiskCap() async throws {
        let data = RecordingFixtures.temporaryDirectory()
        try RecordingFixtures.writeFinished(in: data, id: "20200101-000000-oldold", seconds: 10, age: 2 * 86_400)
        try RecordingFixtures.writeFinished(in: data, id: "20200102-000000-fresh1", seconds: 10, age: 3600)
        let (server, app) = TestServer.make(
            TestServer.configuration {
                $0.dataDirectory = data
                $0.retentionHours = 24
                $0.maxDiskMegabytes = 1
            })
        try await app.test(.live) { client in
            #expect(await Poll.until(seconds: 5) { server.recordings.all.count == 1 } != nil)
            #expect(!FileManager.default.fileExists(atPath: data + "/recordings/20200101-000000-oldold"))
            #expect(server.recordings.all.map(\.id) == ["20200102-000000-fresh1"])

            // 384 kB/s: the fresh recording (320 kB) must go first, then the new one hits the cap.
            let id = try await RecordingFixtures.start(client, #"{"rate":48000,"channels":2,"format":"f32le"}"#)
            let details = try await RecordingFixtures.waitUntilFinished(client, id, seconds: 10)
            #expect(details["state"] as? String == "failed")
            let failure = details["failure"] as? [String: Any]
            #expect(failure?["code"] as? String == "disk_limit")
            #expect((failure?["message"] as? String)?.contains("--max-disk-mb") == true)
            #expect(!FileManager.default.fileExists(atPath: data + "/recordings/20200102-000000-fresh1"))
            let list = try await client.execute(uri: "/v1/recordings", method: .get).json
            let used = (list["disk"] as? [String: Any])?["used_bytes"] as? Int ?? .max
            #expect(used <= 1 << 20)
            #expect(RecordingStore.size(ofDirectory: data + "/recordings/" + id) <= 1 << 20)
            // What was written is intact and the server serves on.
            let wav = try RecordingFixtures.readWAV(try await RecordingFixtures.segment(client, id, 0))
            #expect(wav.samples.count / 2 == details.int("frames"))
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
        }
    }

    @Test(
        "a full disk (ENOSPC) fails the recording with no_space and the server keeps serving",
        .enabled(if: RecordingFixtures.canMountTmpfs, "needs permission to mount a small tmpfs"))
    func fullDisk() async throws {
        let data = RecordingFixtures.temporaryDirectory("full-disk")
        try #require(RecordingFixtures.mountTmpfs(at: data, kilobytes: 400))
        defer { RecordingFixtures.unmount(data) }
        let (server, app) = TestServer.make(TestServer.configuration { $0.dataDirectory = data })
        try await app.test(.live) { client in
            #expect(await Poll.until(seconds: 5) { server.engine.capture.monitor.snapshot.state == .running } != nil)
            let id = try await RecordingFixtures.start(client, #"{"rate":48000,"channels":2,"format":"f32le"}"#)
            let details = try await RecordingFixtures.waitUntilFinished(client, id, seconds: 10)
            #expect(details["state"] as? String == "failed")
            let failure = details["failure"] as? [String: Any]
            #expect(failure?["code"] as? String == "no_space")
            // The final state reached the disk too (the recording's reserve made room for it).
            let saved = try RecordingStore.decoder.decode(
                RecordingInfo.self, from: Data(contentsOf: URL(fileURLWithPath: "\(data)/recordings/\(id)/recording.json")))
            #expect(saved.state == .failed)
            #expect(saved.failure?.code == "no_space")
            #expect(!FileManager.default.fileExists(atPath: "\(data)/recordings/\(id)/\(RecordingStore.reserveFile)"))
            RealTime.log("full disk: \(failure?["message"] ?? "-") after \(details["duration_seconds"] ?? "-") s")
            let capture = try await client.execute(uri: "/v1/capture?seconds=0.3", method: .get)
            #expect(capture.status == .ok)
            #expect(capture.body.readableBytes == 9600)
            let wav = try RecordingFixtures.readWAV(try await RecordingFixtures.segment(client, id, 0))
            #expect(wav.samples.count / 2 == details.int("frames"))
            // Space freed by deleting the recording is usable again.
            #expect(try await client.execute(uri: "/v1/recordings/\(id)", method: .delete).status == .noContent)
            let again = try await RecordingFixtures.start(client, #"{"max_seconds":0.5}"#)
            let next = try await RecordingFixtures.waitUntilFinished(client, again, seconds: 5)
            #expect(next["state"] as? String == "completed")
        }
    }

    @Test("a graceful shutdown finishes running recordings: segments final, state stopped by shutdown")
    func shutdownFinishes() async throws {
        let data = RecordingFixtures.temporaryDirectory()
        let (server, app) = TestServer.make(TestServer.configuration { $0.dataDirectory = data })
        let started = Locked("")
        try await app.test(.live) { client in
            #expect(await Poll.until(seconds: 5) { server.engine.capture.monitor.snapshot.state == .running } != nil)
            let id = try await RecordingFixtures.start(client, #"{"segment_seconds":1}"#)
            started.withLock { $0 = id }
            #expect(await Poll.until(seconds: 5) { (server.recordings.all.first?.frames ?? 0) > 20000 } != nil)
        }
        let id = started.value
        let saved = try RecordingStore.decoder.decode(
            RecordingInfo.self, from: Data(contentsOf: URL(fileURLWithPath: "\(data)/recordings/\(id)/recording.json")))
        #expect(saved.state == .stopped)
        #expect(saved.stopReason == "shutdown")
        #expect(saved.segments.allSatisfy { $0.complete })
        #expect(saved.segments.first?.frames == 16000)
        let last = try #require(saved.segments.last)
        let wav = try RecordingFixtures.readWAV([UInt8](Data(contentsOf: URL(fileURLWithPath: "\(data)/recordings/\(id)/\(last.file)"))))
        #expect(wav.samples.count == last.frames)
    }

    @Test("bad requests get clean 4xx and touch no file; ids are never paths")
    func badRequests() async throws {
        let parent = RecordingFixtures.temporaryDirectory("parent")
        let data = parent + "/data"
        _ = FileManager.default.createFile(atPath: parent + "/secret.wav", contents: Data("not yours".utf8))
        let (_, app) = TestServer.make(TestServer.configuration { $0.dataDirectory = data })
        try await app.test(.live) { client in
            let bodies = [
                #"{"format":"mp3"}"#, #"{"segment_seconds":0}"#, #"{"rate":7}"#, #"{"channels":0}"#, "not json",
                #"{"max_seconds":"long"}"#, #"{"name":"\#(String(repeating: "n", count: 300))"}"#,
            ]
            for body in bodies {
                let response = try await client.execute(
                    uri: "/v1/recordings", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: body))
                #expect(response.status == .badRequest, "\(body)")
                #expect((response.json["error"] as? [String: Any])?["code"] as? String == "bad_body")
            }
            let paths = [
                "/v1/recordings/..", "/v1/recordings/..%2Fsecret", "/v1/recordings/%2e%2e", "/v1/recordings/A",
                "/v1/recordings/..%2F..%2Fsecret/segments/0.wav", "/v1/recordings/x/segments/..%2F..%2Fsecret.wav",
                "/v1/recordings/nosuch", "/v1/recordings/nosuch/segments/0.wav", "/v1/recordings/nosuch/segments/-1.wav",
            ]
            for path in paths {
                for method in [HTTPRequest.Method.get, .delete] {
                    let response = try await client.execute(uri: path, method: method)
                    #expect((400..<500).contains(Int(response.status.code)), "\(method) \(path): \(response.status)")
                    #expect(response.headers[.contentType] == "application/json", "\(path)")
                }
            }
            let stop = try await client.execute(uri: "/v1/recordings/../stop", method: .post)
            #expect((400..<500).contains(Int(stop.status.code)))
        }
        #expect(RecordingFixtures.files(under: parent) == ["data", "data/recordings", "secret.wav"])
        #expect(try String(contentsOfFile: parent + "/secret.wav", encoding: .utf8) == "not yours")
    }
}
