import ArgumentParser
import AudioGateServer
import Foundation

/// The flags of `audiogate serve` that bound what clients can make the server hold: connections,
/// decoder threads, upload bodies, speech length and pending marks.
struct LimitOptions: ParsableArguments {
    @Option(help: "Most open connections, counted as they are accepted; more are answered 503 and closed. Keep it well under the process's open-file limit (1024 under systemd by default) so the sound card and recordings can always be opened. [env AUDIOGATE_MAX_CONNECTIONS]")
    var maxConnections: Int = Environment.int("max-connections") ?? 512

    @Option(help: "Most compressed files (MP3, Ogg, FLAC, WebM uploads and WebSocket files) decoding at once, one thread each; more get 503. [env AUDIOGATE_MAX_DECODERS]")
    var maxDecoders: Int = Environment.int("max-decoders") ?? 16

    @Option(help: "Largest POST /v1/playback body in megabytes; a larger one gets 413. [env AUDIOGATE_MAX_BODY_MB]")
    var maxBodyMb: Int = Environment.int("max-body-mb") ?? 256

    @Option(help: "Most seconds of speech one /v1/say text produces; synthesis stops there and the answer says truncated. [env AUDIOGATE_MAX_SAY_SECONDS]")
    var maxSaySeconds: Int = Environment.int("max-say-seconds") ?? 120

    @Option(help: "Most marks waiting to be heard on one playback stream; more are refused with an error. [env AUDIOGATE_MAX_PENDING_MARKS]")
    var maxPendingMarks: Int = Environment.int("max-pending-marks") ?? 256

    func validate() throws {
        for flag in ["max-connections", "max-decoders", "max-body-mb", "max-say-seconds", "max-pending-marks"]
        where Environment.string(flag) != nil && Environment.int(flag) == nil {
            throw ValidationError("AUDIOGATE_\(flag.uppercased().replacingOccurrences(of: "-", with: "_")) must be a whole number")
        }
        guard (8...100_000).contains(maxConnections) else { throw ValidationError("--max-connections must be 8-100000") }
        guard (1...1024).contains(maxDecoders) else { throw ValidationError("--max-decoders must be 1-1024") }
        guard (1...65_536).contains(maxBodyMb) else { throw ValidationError("--max-body-mb must be 1-65536") }
        guard (1...3600).contains(maxSaySeconds) else { throw ValidationError("--max-say-seconds must be 1-3600") }
        guard (1...65_536).contains(maxPendingMarks) else { throw ValidationError("--max-pending-marks must be 1-65536") }
    }

    /// Writes the flags into `limits`.
    func apply(to limits: inout ServerConfiguration.Limits) {
        limits.maxConnections = maxConnections
        limits.maxDecoders = maxDecoders
        limits.maxBodyMegabytes = maxBodyMb
        limits.maxSaySeconds = maxSaySeconds
        limits.maxPendingMarks = maxPendingMarks
    }
}
