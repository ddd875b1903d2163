import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import HummingbirdWSTesting
import WSClient
import NIOCore
import Testing

/// Playback over the WebSocket, heard on the test card's monitor.
@Suite("playback over WebSocket", .serialized)
struct PlaybackWebSocketTests {
    @Test("a 440 Hz tone sent in 20 ms chunks with 0-15 ms jitter plays as one continuous tone")
    func gaplessWithJitter() async throws {
        try await PlaybackServer.live { server, client, monitor in
            let tone = Signal.sine(frequency: 440, rate: 24000, seconds: 3, amplitude: 0.5)
            let log = try await PlaybackClient.session(client) { outbound, log in
                try await PlaybackClient.send(tone, rate: 24000, jitterMs: 15, to: outbound)
                try await outbound.write(.text(#"{"type":"mark","name":"end"}"#))
                await log.wait(for: "mark")
            }
            try await Task.sleep(for: .milliseconds(200))
            monitor.stop()
            let samples = monitor.samples
            let report = PhaseContinuity.check(samples, frequency: 440, rate: PlaybackMonitor.rate)
            let first = try #require(report.firstToneSample)
            let last = try #require(report.lastToneSample)
            let seconds = report.toneSeconds(rate: PlaybackMonitor.rate)
            try SignalCheckFailure.require(abs(seconds - 3) < 0.03, "tone lasted \(seconds) s, expected 3 s")
            try SignalCheckFailure.require(report.gaps.isEmpty, "gaps at \(report.gaps)")
            try SignalCheckFailure.require(
                report.isContinuous(maxJump: 0.2), "phase jump \(report.maxPhaseJump) rad at \(report.maxPhaseJumpSample ?? -1)")
            let measured = Goertzel.dominantFrequency(Array(samples[first...last]), rate: PlaybackMonitor.rate, near: 440)
            try SignalCheckFailure.require(abs(measured - 440) < 1, "tone at \(measured) Hz")
            let level = 20 * log10(report.medianAmplitude)
            try SignalCheckFailure.require(abs(level - 20 * log10(0.5)) < 1, "level \(level) dB")
            // The mark comes once the tone has been heard, not when it was queued.
            let mark = try #require(log.of("mark").first)
            let toneEnd = monitor.time(ofSample: last)
            try SignalCheckFailure.require(
                abs(mark.ms - toneEnd) < 30, "mark \(mark.ms - toneEnd) ms after the tone ended on the monitor")
            #expect(server.engine.mixer.underruns == 0)
            #expect(log.of("drained").count >= 1)
        }
    }

    @Test("marks arrive in order, each when its audio has been heard; started when the first was")
    func marksInOrder() async throws {
        try await PlaybackServer.live { server, client, monitor in
            let tone = Signal.sine(frequency: 600, rate: 24000, seconds: 0.3, amplitude: 0.5)
            let silence = [Float](repeating: 0, count: 24000 * 3 / 10)
            let log = try await PlaybackClient.session(client) { outbound, log in
                for index in 0..<3 {
                    try await PlaybackClient.send(tone, rate: 24000, realTime: false, to: outbound)
                    try await outbound.write(.text(#"{"type":"mark","name":"m\#(index)"}"#))
                    try await PlaybackClient.send(silence, rate: 24000, realTime: false, to: outbound)
                }
                await log.wait(for: "mark", count: 3)
            }
            try await Task.sleep(for: .milliseconds(100))
            monitor.stop()
            let marks = log.of("mark")
            #expect(marks.map(\.name) == ["m0", "m1", "m2"])
            let segments = PlaybackAnalysis.segments(monitor.samples)
            try SignalCheckFailure.require(segments.count == 3, "found \(segments.count) tone segments on the monitor")
            for (mark, segment) in zip(marks, segments) {
                let end = monitor.time(ofSample: segment.upperBound)
                try SignalCheckFailure.require(
                    abs(mark.ms - end) < 30, "\(mark.name ?? "?") arrived \(mark.ms - end) ms after its audio ended")
            }
            // The silence between the tones is audio too: one run, one `started`, when its first frame was heard.
            let started = log.of("started")
            #expect(started.count == 1)
            let begin = monitor.time(ofSample: segments[0].lowerBound)
            try SignalCheckFailure.require(
                started.count == 1 && abs(started[0].ms - begin) < 30,
                "started arrived \((started.first?.ms ?? .nan) - begin) ms after the first tone began")
        }
    }

    @Test("clear during a long sentence: silence within 60 ms, played_ms matches what was heard")
    func clearBargeIn() async throws {
        try await PlaybackServer.live { server, client, monitor in
            // 470 Hz: no whole number of cycles in a 10 ms period, so a period's end is not a zero crossing.
            let tone = Signal.sine(frequency: 470, rate: 24000, seconds: 5, amplitude: 0.5)
            let clearedAt = Locked(0.0)
            let log = try await PlaybackClient.session(client) { outbound, log in
                try await PlaybackClient.send(tone, rate: 24000, chunkMs: 100, realTime: false, to: outbound)
                try await Task.sleep(for: .milliseconds(1200))
                clearedAt.withLock { $0 = MonotonicClock.nowMilliseconds() }
                try await outbound.write(.text(#"{"type":"clear"}"#))
                await log.wait(for: "cleared")
            }
            try await Task.sleep(for: .milliseconds(200))
            monitor.stop()
            let cleared = try #require(log.of("cleared").first)
            let played = try #require(cleared.fields["played_ms"])
            let flushed = try #require(cleared.fields["flushed_ms"])
            let segments = PlaybackAnalysis.segments(monitor.samples)
            let heard = try #require(segments.first)
            let heardMs = PlaybackAnalysis.milliseconds(heard.count)
            let silenceAfter = monitor.time(ofSample: heard.upperBound) - clearedAt.value
            try SignalCheckFailure.require(silenceAfter < 60, "silence \(silenceAfter) ms after clear")
            try SignalCheckFailure.require(abs(played - heardMs) < 30, "played_ms \(played), monitor heard \(heardMs) ms")
            try SignalCheckFailure.require(abs(played + flushed - 5000) < 30, "played \(played) + flushed \(flushed) != 5000")
            try SignalCheckFailure.require(segments.count == 1, "\(segments.count) segments heard")
            // The cut fades out: no sample steps further than the tone's own (0.031 at 470 Hz).
            let samples = monitor.samples
            let around = Array(samples[max(heard.upperBound - 960, 0)..<min(heard.upperBound + 960, samples.count)])
            let step = Signal.largestStep(around)
            try SignalCheckFailure.require(step < 0.1, "a jump of \(step) where the clear cut the tone")
        }
    }

    @Test("a clear's id comes back in its cleared, so two sockets on one stream each know their own")
    func clearIDs() async throws {
        try await PlaybackServer.live { _, client, _ in
            let tone = Signal.sine(frequency: 500, rate: 24000, seconds: 3, amplitude: 0.5)
            async let first = PlaybackClient.session(client, query: "stream=shared") { outbound, log in
                try await PlaybackClient.send(tone, rate: 24000, chunkMs: 100, realTime: false, to: outbound)
                try await outbound.write(.text(#"{"type":"clear","id":"first"}"#))
                await log.wait(for: "cleared", count: 2)
            }
            async let second = PlaybackClient.session(client, query: "stream=shared") { outbound, log in
                await log.wait(for: "cleared")
                try await outbound.write(.text(#"{"type":"clear","id":"second"}"#))
                await log.wait(for: "cleared", count: 2)
            }
            for log in try await [first, second] {
                let cleared = log.of("cleared")
                #expect(cleared.map(\.id) == ["first", "second"])
                // The tone was queued on the stream when the first clear came; the second found it empty.
                #expect((cleared.first?.fields["flushed_ms"] ?? 0) >= 500)
                #expect(cleared.last?.fields["flushed_ms"] == 0 && cleared.last?.fields["played_ms"] == 0)
            }
        }
    }

    @Test("two streams at once: both tones present, limited without clipping")
    func twoStreams() async throws {
        try await PlaybackServer.live { server, client, monitor in
            let low = Signal.sine(frequency: 300, rate: 24000, seconds: 1.5, amplitude: 0.6)
            let high = Signal.sine(frequency: 500, rate: 24000, seconds: 1.5, amplitude: 0.6)
            async let first = PlaybackClient.session(client, query: "stream=a") { outbound, log in
                try await PlaybackClient.send(low, rate: 24000, realTime: false, to: outbound)
                try await outbound.write(.text(#"{"type":"mark","name":"a"}"#))
                await log.wait(for: "mark")
            }
            async let second = PlaybackClient.session(client, query: "stream=b") { outbound, log in
                try await PlaybackClient.send(high, rate: 24000, realTime: false, to: outbound)
                try await outbound.write(.text(#"{"type":"mark","name":"b"}"#))
                await log.wait(for: "mark")
            }
            _ = try await (first, second)
            monitor.stop()
            let samples = monitor.samples
            let segment = try #require(PlaybackAnalysis.segments(samples).max { $0.count < $1.count })
            try SignalCheckFailure.require(segment.count > 48000, "the mix lasted only \(segment.count) samples")
            let middle = Array(samples[(segment.lowerBound + 9600)..<(segment.upperBound - 9600)])
            let lowLevel = Goertzel.power(middle, frequency: 300, rate: PlaybackMonitor.rate)
            let highLevel = Goertzel.power(middle, frequency: 500, rate: PlaybackMonitor.rate)
            try SignalCheckFailure.require(lowLevel > -8 && highLevel > -8, "300 Hz at \(lowLevel) dB, 500 Hz at \(highLevel) dB")
            let peak = Signal.peak(samples)
            try SignalCheckFailure.require(peak <= 1.0 && peak > 0.85, "peak \(peak)")
            // Wrap-around would flip a loud peak's sign: every sample stays next to its neighbours.
            let largestStep = Signal.largestStep(middle)
            try SignalCheckFailure.require(largestStep < 0.2, "a jump of \(largestStep) between samples")
        }
    }

    @Test("protocol errors are answered and the socket keeps working; odd byte counts are carried")
    func protocolErrors() async throws {
        let (server, app) = PlaybackServer.make()
        try await app.test(.live) { client in
            await TestServer.waitForPlayback(server)
            let bytes = SampleConversion.encode(Signal.sine(frequency: 440, rate: 24000, seconds: 0.2, amplitude: 0.3), format: .s16le)
            let log = try await PlaybackClient.session(client) { outbound, log in
                try await outbound.write(.text("not json"))
                try await outbound.write(.text(#"{"type":"dance"}"#))
                try await outbound.write(.text(#"{"type":"audio","data":"!!"}"#))
                // Split on odd byte boundaries: the server carries the half sample.
                try await outbound.write(.binary(ByteBuffer(bytes: bytes[0..<1001])))
                try await outbound.write(.binary(ByteBuffer(bytes: bytes[1001...])))
                try await outbound.write(.text(#"{"type":"audio","data":"\#(Base64.encode(Array(bytes[0..<960])))"}"#))
                try await outbound.write(.text(#"{"type":"mark","name":"done"}"#))
                await log.wait(for: "mark")
            }
            let codes = log.of("error").map { $0.type }
            #expect(codes.count == 3)
            #expect(log.of("mark").first?.name == "done")
        }
        let (_, app2) = PlaybackServer.make()
        try await app2.test(.live) { client in
            let response = try await client.execute(uri: "/v1/playback?rate=5", method: .get, headers: [.connection: "upgrade", .upgrade: "websocket", .secWebSocketVersion: "13", .secWebSocketKey: "dGhlIHNhbXBsZSBub25jZQ=="])
            #expect(response.status == .badRequest)
        }
    }
}
