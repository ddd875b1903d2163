import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import HummingbirdTesting
import NIOCore
import Testing

/// Echo cancellation and voice detection on the echo room: the agent (audiogate's playback) is
/// heard by the microphone 40 ms and a sound server later; the user speaks straight into the room.
@Suite("Voice processing in the echo room", .serialized, .timeLimit(.minutes(3)))
struct VoiceRoomTests {
    static let agentText =
        "Hello, I am the agent. The weather today is sunny with a light breeze, and tomorrow will be much the same."
    /// Long enough that its double-talk copy lies wholly inside the agent's speech.
    static let userText = "Stop, wait a moment please. I have another question."

    static func chunks(_ stream: CapturedStream) -> [(timestampMs: Double, samples: [Float])] {
        stream.audio.map { ($0.timestampMs, $0.pcm.samples(.s16le)) }
    }

    /// Echo-to-user ratios at the microphone: a quiet echo, echo as loud as the user (a speakerphone
    /// on a table), and an echo 10 dB louder than the user.
    static let ratios: [Double] = [-10, 0, 10]

    @Test("agent echo cancelled (ERLE), user kept alone and in double talk, VAD only for the user", arguments: ratios)
    func room(echoToUserDB: Double) async throws {
        try #require(TestRoom.prepare(), "the echo room could not be set up")
        let (agent, user) = try TestRoom.speechPair(
            agent: (Self.agentText, "en"), user: (Self.userText, "en+f3"), echoToUserDB: echoToUserDB)
        let agentWAV = try Data(contentsOf: URL(fileURLWithPath: agent.path))
        let agentMs = Double(agent.samples.count) * 1000 / Double(agent.rate)
        let userMs = Double(user.samples.count) * 1000 / Double(user.rate)
        // An echo louder than the user leaves the canceller less of the user to keep.
        let doubleTalkLimit = echoToUserDB > 0 ? 10.0 : 6.0
        let (_, app) = TestServer.make(
            TestServer.configuration(device: TestRoom.microphone) { $0.playbackDevice = TestRoom.speaker })
        try await app.test(.live) { client in
            try await RealTime.retryingOnSteal {
                let steal = Steal.sample()
                let marks = Locked([String: Double]())
                let total = (agentMs + userMs * 2 + 5000) / 1000
                async let rawStream = CaptureClient.receive(client, "rate=16000&encoding=json", seconds: total)
                async let processedStream = CaptureClient.receive(
                    client, "rate=16000&encoding=json&aec=true&ns=true&vad=true", seconds: total)
                // The agent talks alone, then the user alone, then both at once.
                try await Task.sleep(for: .seconds(1.5))
                _ = try await client.execute(
                    uri: "/v1/playback", method: .post, headers: [.contentType: "audio/wav"], body: ByteBuffer(bytes: agentWAV))
                try await Task.sleep(for: .milliseconds(Int(agentMs) + 800))
                marks.withLock { $0["user"] = MonotonicClock.nowMilliseconds() }
                await Task.detached { TestRoom.playIntoRoom(user.path) }.value
                try await Task.sleep(for: .seconds(1))
                _ = try await client.execute(
                    uri: "/v1/playback", method: .post, headers: [.contentType: "audio/wav"], body: ByteBuffer(bytes: agentWAV))
                try await Task.sleep(for: .seconds(1))
                marks.withLock { $0["double"] = MonotonicClock.nowMilliseconds() }
                await Task.detached { TestRoom.playIntoRoom(user.path) }.value
                let (raw, processed) = try await (rawStream, processedStream)
                let stealPercent = Steal.sample().percent(since: steal)

                #expect(processed.start?.contains("\"processing\":{\"aec\":true,\"ns\":true,\"agc\":false,\"vad\":true}") == true)
                let start = min(raw.audio.first?.timestampMs ?? 0, processed.audio.first?.timestampMs ?? 0)
                let rawLine = CaptureTimeline(rate: 16000, startMs: start, chunks: Self.chunks(raw))
                let processedLine = CaptureTimeline(rate: 16000, startMs: start, chunks: Self.chunks(processed))
                let agentStart = try #require(rawLine.onset(after: start, thresholdDBFS: -50), "no agent echo captured")
                let userStart = try #require(
                    rawLine.onset(after: marks.value["user"] ?? 0, thresholdDBFS: -50), "no user speech captured")
                let doubleStart = (marks.value["double"] ?? 0) + (userStart - (marks.value["user"] ?? 0))

                func erle(_ from: Double, _ to: Double) -> Double { rawLine.level(from, to) - processedLine.level(from, to) }
                let early = erle(agentStart, agentStart + 1000)
                let late = erle(agentStart + 2000, agentStart + agentMs - 200)
                let echoRaw = rawLine.level(agentStart + 2000, agentStart + agentMs - 200)
                let userRaw = rawLine.level(userStart, userStart + userMs)
                let userProcessed = processedLine.level(userStart, userStart + userMs)
                let doubleProcessed = processedLine.level(doubleStart, doubleStart + userMs)
                // The user's double-talk copy found sample-exactly in the raw microphone (the echo is
                // uncorrelated with it); then the part of the processed output that is the user's
                // voice, against the processed user alone, so residual echo does not count as kept.
                // Chunks are laid back to back: their timestamps may be a sample or two off the count,
                // which would decorrelate the two copies.
                let rawRun = CaptureTimeline(rate: 16000, startMs: start, contiguous: Self.chunks(raw))
                let processedRun = CaptureTimeline(rate: 16000, startMs: start, contiguous: Self.chunks(processed))
                let margin = 60.0
                let lag = Signal.bestLag(
                    of: Array(rawRun.window(userStart, userStart + userMs)),
                    in: Array(rawRun.window(doubleStart - margin, doubleStart + userMs + margin)), maxLag: 1920)
                let doubleAligned = doubleStart - margin + Double(lag) * 1000 / 16000
                let userKept = Signal.componentLevel(
                    of: Array(processedRun.window(userStart, userStart + userMs)),
                    in: Array(processedRun.window(doubleAligned, doubleAligned + userMs)))
                let events = processed.voiceEvents
                let relative = processed.voiceEventsDescription(from: agentStart)
                RealTime.log(
                    String(
                        format: "room at %+.0f dB echo-to-user (measured %+.1f): ERLE first 1 s %.1f dB, after 2 s %.1f dB; "
                            + "user alone raw %.1f processed %.1f dBFS; double talk processed %.1f dBFS (%+.1f dB), user kept %+.1f dB; "
                            + "steal %.1f%%; "
                            + "user at %d ms, double talk at %d ms after agent",
                        echoToUserDB, echoRaw - userRaw, early, late, userRaw, userProcessed, doubleProcessed,
                        doubleProcessed - userProcessed, userKept, stealPercent, Int(userStart - agentStart), Int(doubleStart - agentStart))
                        + "; vad: " + relative)

                try SignalCheckFailure.require(abs(echoRaw - userRaw - echoToUserDB) <= 2, "the room's echo-to-user ratio \(echoRaw - userRaw) dB")
                try SignalCheckFailure.require(early >= 15, "ERLE in the first second \(early) dB")
                try SignalCheckFailure.require(late >= 30, "ERLE after 2 s \(late) dB")
                try SignalCheckFailure.require(abs(userProcessed - userRaw) <= 3, "user alone: raw \(userRaw), processed \(userProcessed)")
                try SignalCheckFailure.require(userKept >= -doubleTalkLimit, "the user in double talk \(userKept) dB against the user alone")
                let agentAlone = events.filter {
                    $0.state == "speech"
                        && ($0.ms >= agentStart && $0.ms < userStart - 100
                            || $0.ms >= userStart + userMs + 300 && $0.ms < doubleStart - 100)
                }
                try SignalCheckFailure.require(agentAlone.isEmpty, "speech detected while only the agent's echo played: \(relative)")
                let userOnset = events.first { $0.state == "speech" && $0.ms >= userStart - 100 && $0.ms < userStart + userMs }
                try SignalCheckFailure.require(userOnset.map { $0.ms - userStart <= 150 } == true, "user onset: \(relative)")
                let doubleOnset = events.first {
                    $0.state == "speech" && $0.ms >= doubleStart - 300 && $0.ms < doubleStart + userMs
                }
                try SignalCheckFailure.require(doubleOnset != nil, "no speech event in double talk: \(relative)")
            }
        }
    }

    @Test("clients asking for the same processing share one processing thread")
    func sharedProcessing() async throws {
        let (_, app) = TestServer.make()
        try await app.test(.live) { client in
            let counts = Locked([[String]]())
            try await withThrowingTaskGroup(of: Void.self) { group in
                for query in ["aec=true", "aec=true", "aec=true&format=s16le", "ns=true"] {
                    group.addTask {
                        _ = try await CaptureClient.receive(client, "rate=16000&\(query)", seconds: 1.5) { stream in
                            if stream.chunkCount == 40 { counts.withLock { $0.append(Self.voiceThreads()) } }
                            return false
                        }
                    }
                }
                try await group.waitForAll()
            }
            // Four clients, two settings: two processing threads.
            #expect(counts.value.contains(["voice-aec", "voice-ns"]), "voice threads seen: \(counts.value)")
        }
    }

    /// Processing threads of this process (named after their setting).
    static func voiceThreads() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            return name.hasPrefix("voice-") ? name.trimmingCharacters(in: .whitespacesAndNewlines) : nil
        }.sorted()
    }

    @Test("bad processing parameters are a JSON 400 naming the parameter")
    func badParameters() async throws {
        let (_, app) = TestServer.make()
        try await app.test(.router) { client in
            for (query, needle) in [
                ("aec=maybe", "'aec'"), ("vad=yes", "'vad'"), ("aec=true&rate=44100", "44100"),
                ("ns=true&channels=2", "2 channels"),
            ] {
                let response = try await client.execute(uri: "/v1/capture?\(query)", method: .get)
                #expect(response.status == .badRequest, "\(query)")
                let error = response.json["error"] as? [String: Any]
                #expect(error?["code"] as? String == "bad_parameter", "\(query)")
                #expect((error?["message"] as? String)?.contains(needle) == true, "\(query): \(error ?? [:])")
            }
            let body = ByteBuffer(string: "{\"aec\":true,\"rate\":44100}")
            let response = try await client.execute(uri: "/v1/recordings", method: .post, body: body)
            #expect(response.status == .badRequest)
        }
    }
}
