import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import HummingbirdTesting
import NIOCore
import Testing

/// Music played through audiogate (`role=music`) is part of the mixer's output, so the echo
/// canceller removes it from the microphone like the agent's voice: the voice detector hears the
/// user over the music and never the music alone.
@Suite("Music in the echo room", .serialized, .timeLimit(.minutes(3)))
struct VoiceMusicRoomTests {
    /// One phrase each, without a pause: the detector ends speech after 400 ms without voice, so a
    /// sentence break would rightly count twice.
    static let userText = "Please turn the music down a little"
    static let secondText = "What is the weather like tomorrow"

    static func chunks(_ stream: CapturedStream) -> [(timestampMs: Double, samples: [Float])] {
        stream.audio.map { ($0.timestampMs, $0.pcm.samples(.s16le)) }
    }

    @Test("music cancelled (ERLE from 2 s), no speech event for music alone, one for each utterance over it")
    func musicRoom() async throws {
        try #require(TestRoom.prepare(), "the echo room could not be set up")
        let first = try TestRoom.speech(Self.userText, voice: "en+f3")
        let second = try TestRoom.speech(Self.secondText, voice: "en+m3")
        let firstMs = Double(first.samples.count) * 1000 / Double(first.rate)
        let secondMs = Double(second.samples.count) * 1000 / Double(second.rate)
        let musicSeconds = 5.0 + firstMs / 1000 + 2.5 + secondMs / 1000 + 1.5
        // Background music, a few dB under the user at the microphone.
        let music = MusicLike.chords(rate: 48000, seconds: musicSeconds, amplitude: 0.15)
        let musicWAV = WAVFile.write(samples: music, format: AudioFormat(rate: 48000, channels: 1, sampleFormat: .s16le))
        let (_, app) = TestServer.make(
            TestServer.configuration(device: TestRoom.microphone) { $0.playbackDevice = TestRoom.speaker })
        try await app.test(.live) { client in
            try await RealTime.retryingOnSteal {
                let steal = Steal.sample()
                let marks = Locked([String: Double]())
                let total = 1.5 + musicSeconds + 1.5
                async let rawStream = CaptureClient.receive(client, "rate=16000&encoding=json", seconds: total)
                async let processedStream = CaptureClient.receive(
                    client, "rate=16000&encoding=json&aec=true&vad=true", seconds: total)
                try await Task.sleep(for: .seconds(1.5))
                let posted = try await client.execute(
                    uri: "/v1/playback?role=music&stream=music", method: .post, headers: [.contentType: "audio/wav"],
                    body: ByteBuffer(bytes: musicWAV))
                #expect(posted.status == .ok)
                try await Task.sleep(for: .seconds(5))
                marks.withLock { $0["first"] = MonotonicClock.nowMilliseconds() }
                await Task.detached { TestRoom.playIntoRoom(first.path) }.value
                try await Task.sleep(for: .seconds(2.5))
                marks.withLock { $0["second"] = MonotonicClock.nowMilliseconds() }
                await Task.detached { TestRoom.playIntoRoom(second.path) }.value
                let (raw, processed) = try await (rawStream, processedStream)
                let stealPercent = Steal.sample().percent(since: steal)

                let start = min(raw.audio.first?.timestampMs ?? 0, processed.audio.first?.timestampMs ?? 0)
                let rawLine = CaptureTimeline(rate: 16000, startMs: start, chunks: Self.chunks(raw))
                let processedLine = CaptureTimeline(rate: 16000, startMs: start, chunks: Self.chunks(processed))
                let musicStart = try #require(rawLine.onset(after: start, thresholdDBFS: -50), "no music echo captured")
                // The user's speech is found by when it was started; the room adds its own latency.
                let firstStart = try #require(marks.value["first"])
                let secondStart = try #require(marks.value["second"])
                func erle(_ from: Double, _ to: Double) -> Double { rawLine.level(from, to) - processedLine.level(from, to) }
                let musicAlone = erle(musicStart + 2000, firstStart - 100)
                let betweenUtterances = erle(firstStart + firstMs + 400, secondStart - 100)
                let musicRaw = rawLine.level(musicStart + 2000, firstStart - 100)
                let userRaw = rawLine.level(firstStart, firstStart + firstMs)
                let events = processed.voiceEvents
                let relative = processed.voiceEventsDescription(from: musicStart)
                RealTime.log(
                    String(
                        format: "music room: ERLE from 2 s %.1f dB, between utterances %.1f dB; music %.1f dBFS, "
                            + "music and user %.1f dBFS at the microphone; steal %.1f%%; first user at %d ms, second at %d ms",
                        musicAlone, betweenUtterances, musicRaw, userRaw, stealPercent, Int(firstStart - musicStart),
                        Int(secondStart - musicStart)) + "; vad: " + relative)

                #expect(musicRaw > -40, "the music reached the microphone at \(musicRaw) dBFS")
                #expect(musicAlone >= 30, "music ERLE from 2 s \(musicAlone) dB")
                #expect(betweenUtterances >= 30, "music ERLE between the utterances \(betweenUtterances) dB")
                let speechEvents = events.filter { $0.state == "speech" }
                let alone = speechEvents.filter {
                    $0.ms >= musicStart && $0.ms < firstStart - 100
                        || $0.ms >= firstStart + firstMs + 500 && $0.ms < secondStart - 100
                }
                #expect(alone.isEmpty, "speech detected while only music played: \(relative)")
                let overFirst = speechEvents.filter { $0.ms >= firstStart - 100 && $0.ms < firstStart + firstMs + 500 }
                let overSecond = speechEvents.filter { $0.ms >= secondStart - 100 && $0.ms < secondStart + secondMs + 500 }
                #expect(overFirst.count == 1, "speech events over the first utterance: \(relative)")
                #expect(overSecond.count == 1, "speech events over the second utterance: \(relative)")
            }
        }
    }
}
