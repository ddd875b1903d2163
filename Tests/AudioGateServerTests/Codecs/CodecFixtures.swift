import AudioGateServer
import Foundation

/// Compressed test files made by ffmpeg at test time from a known tone.
enum CodecFixtures {
    /// One encoding: container, ffmpeg codec arguments, rate and channels of the tone.
    struct Kind: Sendable, CustomStringConvertible {
        var container: AudioContainer
        var contentType: String
        var codecArguments: [String]
        var fileExtension: String
        var rate: Int
        var channels: Int

        var description: String { "\(fileExtension) \(rate) Hz \(channels) ch" }
    }

    static let mp3Stereo = Kind(
        container: .mp3, contentType: "audio/mpeg", codecArguments: ["-c:a", "libmp3lame", "-b:a", "128k"],
        fileExtension: "mp3", rate: 44100, channels: 2)
    static let mp3Mono = Kind(
        container: .mp3, contentType: "audio/mpeg", codecArguments: ["-c:a", "libmp3lame", "-b:a", "64k"],
        fileExtension: "mp3", rate: 24000, channels: 1)
    static let opus = Kind(
        container: .ogg, contentType: "audio/ogg", codecArguments: ["-c:a", "libopus", "-b:a", "64k"],
        fileExtension: "opus", rate: 48000, channels: 1)
    static let vorbis = Kind(
        container: .ogg, contentType: "audio/ogg", codecArguments: ["-c:a", "libvorbis", "-q:a", "4"],
        fileExtension: "ogg", rate: 44100, channels: 2)
    static let flac16 = Kind(
        container: .flac, contentType: "audio/flac", codecArguments: ["-c:a", "flac"], fileExtension: "flac", rate: 16000,
        channels: 1)
    static let flac48 = Kind(
        container: .flac, contentType: "audio/flac", codecArguments: ["-c:a", "flac"], fileExtension: "flac", rate: 48000,
        channels: 2)
    static let webm = Kind(
        container: .webm, contentType: "audio/webm", codecArguments: ["-c:a", "libopus", "-b:a", "64k"],
        fileExtension: "webm", rate: 48000, channels: 2)

    static let all = [mp3Stereo, mp3Mono, opus, vorbis, flac16, flac48, webm]
    /// One file per decoder path (container and codec).
    static let paths = [mp3Stereo, opus, vorbis, flac16, webm]

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// `seconds` of a `frequency` Hz sine at half scale, encoded as `kind`.
    static func make(_ kind: Kind, frequency: Double, seconds: Double) throws -> [UInt8] {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "audiogate-codec-\(getpid())-\(UUID().uuidString).\(kind.fileExtension)")
        defer { try? FileManager.default.removeItem(at: url) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            [
                "ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                "sine=frequency=\(frequency):sample_rate=\(kind.rate):duration=\(seconds)", "-af", "volume=4",
                "-ac", "\(kind.channels)",
            ] + kind.codecArguments + [url.path]
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "ffmpeg \(kind): \(String(decoding: message, as: UTF8.self))")
        }
        return Array(try Data(contentsOf: url))
    }
}
