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

    /// Plays a WAV file straight into the room (what only the microphone hears); returns when done.
    public static func playIntoRoom(_ path: String) {
        TestCard.run("paplay", "--device=room", path)
    }
}
