import Foundation

/// Runs the real ffmpeg and ffprobe on test audio: the reference a test compares the server's bytes with.
public enum FFmpegTool {
    /// ffmpeg or ffprobe exited with an error.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Runs `ffmpeg -v error -y <arguments>` where the literal `INPUT` and `OUTPUT` arguments stand for
    /// temporary files holding `input` and what ffmpeg writes; answers the output bytes.
    public static func convert(_ input: [UInt8], arguments: [String], outputExtension: String = "raw") throws -> [UInt8] {
        let directory = FileManager.default.temporaryDirectory
        let stem = "audiogate-ffmpeg-\(getpid())-\(UUID().uuidString)"
        let inputURL = directory.appendingPathComponent(stem + ".in")
        let outputURL = directory.appendingPathComponent(stem + ".out.\(outputExtension)")
        defer {
            try? FileManager.default.removeItem(at: inputURL)
            try? FileManager.default.removeItem(at: outputURL)
        }
        try Data(input).write(to: inputURL)
        let substituted = arguments.map { $0 == "INPUT" ? inputURL.path : $0 == "OUTPUT" ? outputURL.path : $0 }
        _ = try run("ffmpeg", ["-v", "error", "-y"] + substituted)
        return Array(try Data(contentsOf: outputURL))
    }

    /// Decodes a file of any format ffmpeg reads to interleaved Float samples at its own rate;
    /// answers them with the rate and channel count ffprobe reports.
    public static func decode(path: String) throws -> (samples: [Float], rate: Int, channels: Int) {
        let stream = try probeStream(path: path)
        let rate = Int(stream["sample_rate"] as? String ?? "") ?? 0
        let channels = stream["channels"] as? Int ?? 0
        let output = try run("ffmpeg", ["-v", "error", "-i", path, "-f", "f32le", "-acodec", "pcm_f32le", "-"])
        let samples = output.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
        return (samples, rate, channels)
    }

    /// ffprobe's description of a file's first audio stream (`codec_name`, `sample_rate`, `channels`, ...);
    /// throws when ffprobe finds no valid audio stream.
    public static func probeStream(path: String) throws -> [String: Any] {
        let output = try run("ffprobe", ["-v", "error", "-print_format", "json", "-show_streams", "-show_format", path])
        guard let object = try JSONSerialization.jsonObject(with: Data(output)) as? [String: Any],
            let streams = object["streams"] as? [[String: Any]], let audio = streams.first(where: { $0["codec_type"] as? String == "audio" })
        else { throw Failure(description: "ffprobe found no audio stream in \(path)") }
        return audio
    }

    /// Runs a tool from PATH; answers its standard output, throws with its standard error on failure.
    /// Both go through files, so a large output cannot fill a pipe and block the tool.
    @discardableResult
    public static func run(_ tool: String, _ arguments: [String]) throws -> [UInt8] {
        let directory = FileManager.default.temporaryDirectory
        let stem = "audiogate-\(tool)-\(getpid())-\(UUID().uuidString)"
        let outURL = directory.appendingPathComponent(stem + ".stdout")
        let errURL = directory.appendingPathComponent(stem + ".stderr")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        try process.run()
        process.waitByPolling()
        try out.close()
        try err.close()
        guard process.terminationStatus == 0 else {
            let message = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
            throw Failure(description: "\(tool) \(arguments.joined(separator: " ")): \(message)")
        }
        return Array(try Data(contentsOf: outURL))
    }
}
