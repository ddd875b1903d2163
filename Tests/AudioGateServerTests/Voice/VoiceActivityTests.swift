import Testing

@testable import AudioGateServer

/// The detector's onset and hangover rules, and the double-talk hint that keeps an utterance whose
/// syllables the canceller cut.
@Suite("voice activity")
struct VoiceActivityTests {
    @Test("the echo return loss is learned on echo-only frames and judges a louder microphone")
    func returnLoss() {
        var loss = EchoReturnLoss()
        for _ in 0..<(EchoReturnLoss.learningFrames - 1) {
            loss.reference(-20)
            loss.learn(rawDBFS: -30, floorDBFS: -60)
        }
        #expect(!loss.nearEndLouder(rawDBFS: -10), "judged before it learned enough")
        loss.reference(-20)
        loss.learn(rawDBFS: -30, floorDBFS: -60)
        #expect(abs(loss.lossDB + 10) < 1e-9)
        // The echo of -20 dBFS arrives at -30 dBFS: 6 dB over that is near-end voice.
        #expect(loss.nearEndLouder(rawDBFS: -23))
        #expect(!loss.nearEndLouder(rawDBFS: -25))
        // The loudest reference of the window stands for the echo: a loud frame a few frames ago
        // still explains a loud microphone now.
        loss.reference(-5)
        for _ in 0..<4 { loss.reference(-40) }
        #expect(!loss.nearEndLouder(rawDBFS: -16))
        for _ in 0..<EchoReturnLoss.windowFrames { loss.reference(-40) }
        #expect(loss.nearEndLouder(rawDBFS: -16))
        // A reference under the floor teaches nothing.
        loss.learn(rawDBFS: 0, floorDBFS: -30)
        #expect(abs(loss.lossDB + 10) < 1e-9)
        loss.reset()
        #expect(!loss.nearEndLouder(rawDBFS: 0))
    }

    @Test("a louder microphone keeps speech going through cut syllables but never starts it")
    func nearEndKeepsSpeech() {
        var activity = VoiceActivity()
        var time: UInt64 = 0
        func frame(voiced: Bool, louder: Bool) -> VoiceActivity.Event? {
            defer { time += 10_000_000 }
            return activity.update(
                voiced: voiced, levelDBFS: voiced ? -20 : -70, rawDBFS: -20, start: time, echo: true, nearEndLouder: louder)
        }
        // The hint alone, however long, starts nothing.
        for _ in 0..<100 { #expect(frame(voiced: false, louder: true) == nil) }
        var events: [VoiceActivity.Event] = []
        for _ in 0..<VoiceActivity.onsetFrames { if let event = frame(voiced: true, louder: true) { events.append(event) } }
        #expect(events == [.speech(timestamp: 1_000_000_000)])
        // Cut by the canceller for longer than the hangover, the microphone still louder than the echo.
        for _ in 0..<(VoiceActivity.hangoverFrames * 2) { #expect(frame(voiced: false, louder: true) == nil) }
        #expect(activity.speaking)
        // The user stops: the microphone falls back to the echo, and the hangover ends speech.
        let stop = time
        for _ in 0..<VoiceActivity.hangoverFrames { if let event = frame(voiced: false, louder: false) { events.append(event) } }
        #expect(events.last == .silence(timestamp: stop))
        #expect(!activity.speaking)
    }
}
