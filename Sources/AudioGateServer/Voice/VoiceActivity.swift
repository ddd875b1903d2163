/// Turns per-frame voice decisions into speech and silence events with an onset rule and a hangover.
struct VoiceActivity {
    /// Voiced frames (of 10 ms) in a row that start speech: short clicks do not count.
    static let onsetFrames = 5
    /// Unvoiced frames in a row that end speech: pauses between words stay inside one utterance.
    static let hangoverFrames = 40
    /// Frames quieter than this are never voice (room noise), in dBFS.
    static let floorDBFS = -50.0
    /// While the speaker plays, a frame the canceller took more than this off (in dB) was mostly
    /// echo; a user talking over the agent keeps most of the microphone level.
    static let echoCancelledDB = 12.0

    enum Event: Equatable {
        case speech(timestamp: UInt64)
        case silence(timestamp: UInt64)
    }

    private(set) var speaking = false
    private var run = 0
    private var runStart: UInt64 = 0

    /// Feeds one frame's decision: its processed and unprocessed levels, the capture time of its first
    /// sample, and whether the speaker is playing (so the frame may hold residual echo). Returns the event this frame completes, if any; its timestamp
    /// is the capture time of the audio where speech started or ended.
    ///
    /// `nearEndLouder` (the microphone well over what the speaker's echo explains) keeps speech that
    /// has started from ending; it never starts speech, which stays the detector's call.
    mutating func update(
        voiced: Bool, levelDBFS: Double, rawDBFS: Double, start: UInt64, echo: Bool = false, nearEndLouder: Bool = false
    ) -> Event? {
        let heard = voiced && levelDBFS > Self.floorDBFS && (!echo || levelDBFS > rawDBFS - Self.echoCancelledDB)
        let active = heard || speaking && echo && nearEndLouder
        if active != speaking {
            if run == 0 { runStart = start }
            run += 1
            let needed = speaking ? Self.hangoverFrames : Self.onsetFrames
            guard run >= needed else { return nil }
            speaking = active
            run = 0
            return active ? .speech(timestamp: runStart) : .silence(timestamp: runStart)
        }
        run = 0
        return nil
    }

    /// Forgets a half-counted run (after a discontinuity); the current state stays, so clients
    /// always see speech and silence alternate.
    mutating func reset() {
        run = 0
    }
}
