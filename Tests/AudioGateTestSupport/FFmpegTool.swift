import Foundation
import Synchronization

/// ffmpeg and ffprobe as independent judges of what the server encoded.
public enum FFmpegTool {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Decoded audio: interleaved float samples at the stream's own rate and channel count.
    public struct Decoded: Sendable {
        public var samples: [Float]
        public var rate: Int
        public var channels: Int

        /// Frames decoded.
        public var frames: Int { channels > 0 ? samples.count / channels : 0 }
        /// Seconds decoded.
        public var seconds: Double { rate > 0 ? Double(frames) / Double(rate) : 0 }
        /// The first channel.
        public var mono: [Float] { Signal.channel(samples, channels: channels, index: 0) }
    }

    /// Writes `bytes` to a temporary file named with `fileExtension`, runs `body`, removes the file.
    public static func withFile<T>(_ bytes: [UInt8], fileExtension: String, _ body: (String) throws -> T) throws -> T {
        let path = NSTemporaryDirectory() + "audiogate-encoded-\(getpid())-\(UUID().uuidString).\(fileExtension)"
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw Failure(description: "cannot write \(path)")
        }
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try body(path)
    }

    /// ffprobe's `-show_streams -show_format` of the file, as JSON; throws when ffprobe rejects it.
    public static func probe(_ path: String) throws -> [String: Any] {
        let (status, output, errors) = run(["ffprobe", "-v", "error", "-of", "json", "-show_streams", "-show_format", path])
        guard status == 0, let json = try? JSONSerialization.jsonObject(with: output) as? [String: Any] else {
            throw Failure(description: "ffprobe \(path): \(String(decoding: errors, as: UTF8.self))")
        }
        return json
    }

    /// The first audio stream of `probe`.
    public static func audioStream(_ probe: [String: Any]) -> [String: Any] {
        let streams = probe["streams"] as? [[String: Any]] ?? []
        return streams.first { $0["codec_type"] as? String == "audio" } ?? [:]
    }

    /// Decodes the file with ffmpeg (`-xerror`: any decoding error fails) to float at its own rate.
    public static func decode(_ path: String) throws -> Decoded {
        let stream = audioStream(try probe(path))
        let rate = Int(stream["sample_rate"] as? String ?? "") ?? 0
        let channels = stream["channels"] as? Int ?? 0
        guard rate > 0, channels > 0 else { throw Failure(description: "ffprobe found no audio stream in \(path)") }
        let (status, output, errors) = run(["ffmpeg", "-v", "error", "-xerror", "-i", path, "-f", "f32le", "-acodec", "pcm_f32le", "-"])
        guard status == 0 else { throw Failure(description: "ffmpeg \(path): \(String(decoding: errors, as: UTF8.self))") }
        let samples = output.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        return Decoded(samples: samples, rate: rate, channels: channels)
    }

    /// Decodes bytes of a file of type `fileExtension`.
    public static func decode(_ bytes: [UInt8], fileExtension: String) throws -> Decoded {
        try withFile(bytes, fileExtension: fileExtension) { try decode($0) }
    }

    /// Runs a command, returning its status, standard output and standard error.
    public static func run(_ arguments: [String]) -> (Int32, Data, Data) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do {
            try process.run()
        } catch {
            return (127, Data(), Data("\(error)".utf8))
        }
        // Read both pipes while the process runs, so neither fills up and blocks it.
        let errorData = Mutex(Data())
        let done = DispatchSemaphore(value: 0)
        let reader = Thread {
            let data = errors.fileHandleForReading.readDataToEndOfFile()
            errorData.withLock { $0 = data }
            done.signal()
        }
        reader.start()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitForExit()
        done.wait()
        return (process.terminationStatus, data, errorData.withLock { $0 })
    }
}
