import Foundation
import Glibc

/// The tests' sound card: the PulseAudio null sink from `scripts/test-card.sh`, reached through
/// ALSA's `pulse` PCM, whose capture is the sink's monitor (what is played comes back).
public enum TestCard {
    /// The ALSA PCM that plays into the null sink and captures its monitor.
    public static let device = "pulse"

    /// True when a PulseAudio daemon answers.
    public static var isRunning: Bool { run("pactl", "info") == 0 }

    /// Kills the daemon (a device that vanishes under the loops) and waits until it is gone: the
    /// daemon removes its pid file as the last thing it does on the way out, which wakes the wait.
    public static func kill() {
        let runtime = runtimePath
        let pidFile = runtime + "/pid"
        let watch = inotify_init1(Int32(IN_CLOEXEC))
        guard watch >= 0 else { return }
        defer { close(watch) }
        guard inotify_add_watch(watch, runtime, UInt32(IN_DELETE)) >= 0 else { return }
        _ = run("pulseaudio", "--kill")
        var events = [UInt8](repeating: 0, count: 4096)
        var ready = pollfd(fd: watch, events: Int16(POLLIN), revents: 0)
        // Each event wakes one check; a daemon that has not gone in 5 s is left for the test to find.
        while FileManager.default.fileExists(atPath: pidFile), poll(&ready, 1, 5000) > 0 {
            _ = events.withUnsafeMutableBytes { read(watch, $0.baseAddress, $0.count) }
        }
    }

    /// Where the daemon keeps its socket and pid file: `PULSE_RUNTIME_PATH`, or the folder
    /// `scripts/test-card-env.sh` names when it is unset.
    static var runtimePath: String {
        let environment = ProcessInfo.processInfo.environment
        return environment["PULSE_RUNTIME_PATH"] ?? "\(environment["TMPDIR"] ?? "/tmp")/audiogate-test-card-\(getuid())"
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
        process.waitForExit()
        return process.terminationStatus
    }
}
