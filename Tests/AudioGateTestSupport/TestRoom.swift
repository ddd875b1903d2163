import AudioGateCore
import Foundation

/// The echo test room from `scripts/test-card.sh room`: audiogate plays into the null sink `spk`
/// (the loudspeaker, ALSA `pulse:spk`); a 40 ms loopback carries it into the sink `room`, whose
/// monitor is the microphone (ALSA `pulse:room.monitor`). The user's speech is played straight into
/// `room`. The ALSA names carry the PulseAudio device as the pulse plugin's argument, so they work
/// in a process that read ALSA's configuration before the room existed.
public enum TestRoom {
    /// ALSA PCM of the microphone.
    public static let microphone = "pulse:room.monitor"
    /// ALSA PCM of the loudspeaker.
    public static let speaker = "pulse:spk"

    /// Adds the room to the test daemon (starting it if needed); true when it is ready.
    @discardableResult
    public static func prepare() -> Bool {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../scripts/test-card.sh").standardizedFileURL.path
        return TestCard.run("bash", script, "room") == 0
    }

    /// Speech from espeak-ng as a WAV file: its path, samples and rate.
    public static func speech(_ text: String, voice: String = "en") throws -> (path: String, samples: [Float], rate: Int) {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("audiogate-speech-\(ProcessInfo.processInfo.processIdentifier)-\(abs(text.hashValue)).wav").path
        guard TestCard.run("espeak-ng", "-v", voice, "-w", path, text) == 0 else {
            throw SignalCheckFailure("espeak-ng failed (is it installed?)")
        }
        let wav = try WAVFile.read(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        return (path, wav.samples, wav.format.rate)
    }

    /// The agent's and the user's speech scaled so that the agent's echo reaches the microphone
    /// `echoToUserDB` louder than the user (both paths of the room are at unity gain). The louder
    /// of the two is turned down, so nothing clips. The levels compared are the ones the room test
    /// measures: the agent from 2 s into its speech to its end, the user over the whole utterance.
    public static func speechPair(
        agent: (text: String, voice: String), user: (text: String, voice: String), echoToUserDB: Double
    ) throws -> (agent: (path: String, samples: [Float], rate: Int), user: (path: String, samples: [Float], rate: Int)) {
        let agentSpeech = try speech(agent.text, voice: agent.voice)
        let userSpeech = try speech(user.text, voice: user.voice)
        let agentLevel = Signal.rmsDBFS(Array(agentSpeech.samples.dropFirst(2 * agentSpeech.rate)))
        let userLevel = Signal.rmsDBFS(userSpeech.samples)
        let change = echoToUserDB - (agentLevel - userLevel)
        return (
            try scaled(agentSpeech, by: min(0, change), tag: "agent"),
            try scaled(userSpeech, by: min(0, -change), tag: "user")
        )
    }

    /// A copy of `speech` turned down by `gainDB` (at most 0), written next to it.
    static func scaled(_ speech: (path: String, samples: [Float], rate: Int), by gainDB: Double, tag: String) throws
        -> (path: String, samples: [Float], rate: Int)
    {
        let path = speech.path.replacingOccurrences(of: ".wav", with: "-\(tag)\(Int((gainDB * 10).rounded())).wav")
        guard TestCard.run("sox", speech.path, path, "vol", String(format: "%.2fdB", gainDB)) == 0 else {
            throw SignalCheckFailure("sox failed (is it installed?)")
        }
        let factor = Float(pow(10, gainDB / 20))
        return (path, speech.samples.map { $0 * factor }, speech.rate)
    }

    /// Plays a WAV file straight into the room (what only the microphone hears); returns when done.
    public static func playIntoRoom(_ path: String) {
        TestCard.run("paplay", "--device=room", path)
    }
}
