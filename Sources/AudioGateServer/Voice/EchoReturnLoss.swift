/// A double-talk detector in the manner of Geigel's: learns how much quieter the echo reaches the
/// microphone than the reference that made it, on frames where only the speaker plays, and then
/// tells a frame whose microphone level is well over what the echo alone explains.
///
/// The canceller's suppressor can cut a user's syllables as echo while it re-finds the echo path
/// (tonal music moves its delay estimate); the voice detector then uses this to keep an utterance
/// that has started from ending in such a stretch.
struct EchoReturnLoss {
    /// Frames of reference whose loudest level stands for the echo of a frame: the echo path's
    /// delay and the room's first reflections.
    static let windowFrames = 16
    /// Echo-only frames to learn from before judging any frame.
    static let learningFrames = 50
    /// How much louder than the echo alone a frame must be to hold near-end voice, in dB.
    static let marginDB = 6.0
    /// Weight of each new echo-only frame in the learned loss (a time constant of about 0.5 s).
    static let smoothing = 0.02

    private var recent = [Double](repeating: -.infinity, count: windowFrames)
    private var next = 0
    private var learned = 0
    /// Microphone level minus the loudest recent reference level on echo-only frames, in dB.
    private(set) var lossDB = 0.0

    /// The loudest reference level of the window, in dBFS.
    private(set) var loudestReferenceDBFS = -Double.infinity

    /// Records one frame's reference level, in dBFS.
    mutating func reference(_ levelDBFS: Double) {
        recent[next] = levelDBFS
        next = (next + 1) % Self.windowFrames
        loudestReferenceDBFS = recent.max() ?? -.infinity
    }

    /// Learns from a frame in which only the speaker played (no one talking), at `rawDBFS`.
    mutating func learn(rawDBFS: Double, floorDBFS: Double) {
        let reference = loudestReferenceDBFS
        guard reference > floorDBFS, rawDBFS.isFinite else { return }
        let loss = rawDBFS - reference
        lossDB = learned == 0 ? loss : lossDB + Self.smoothing * (loss - lossDB)
        learned += 1
    }

    /// Whether a frame at `rawDBFS` is louder than the echo of the recent reference explains.
    func nearEndLouder(rawDBFS: Double) -> Bool {
        guard learned >= Self.learningFrames else { return false }
        return rawDBFS > loudestReferenceDBFS + lossDB + Self.marginDB
    }

    /// Forgets what was learned (the echo path moved).
    mutating func reset() {
        self = EchoReturnLoss()
    }
}
