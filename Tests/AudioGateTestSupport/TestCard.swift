import Foundation

/// The tests' sound card: the PulseAudio null sink from `scripts/test-card.sh`, reached through
/// ALSA's `pulse` PCM, whose capture is the sink's monitor (what is played comes back).
public enum TestCard {
    /// The ALSA PCM that plays into the null sink and captures its monitor.
    public static let device = "pulse"

    /// True when a PulseAudio daemon answers.
    public static var isRunning: Bool { run("pactl", "info") == 0 }

    /// Kills the daemon (a device that vanishes under the loops) and waits until it is gone.
    public static func kill() {
        _ = run("pulseaudio", "--kill")
        for _ in 0..<50 where isRunning { Thread.sleep(forTimeInterval: 0.1) }
    }

    /// Starts the daemon again with the null sink: `scripts/test-card.sh start`, which returns once
    /// it answers.
    public static func start() {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../scripts/test-card.sh").standardized.path
        _ = run("bash", script, "start")
    }

    /// Runs a command quietly and returns its exit status (127 when it cannot start).
    @discardableResult
    public static func run(_ arguments: String...) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return 127
        }
        process.waitByPolling()
        return process.terminationStatus
    }
}
