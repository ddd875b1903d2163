import Foundation

extension FFmpegTool {
    /// Runs a command; answers its standard output, throws with its standard error when it fails.
    public static func output(_ arguments: [String]) throws -> [UInt8] {
        let (status, output, errors) = run(arguments)
        guard status == 0 else {
            throw Failure(description: "\(arguments.joined(separator: " ")): \(String(decoding: errors, as: UTF8.self))")
        }
        return Array(output)
    }

    /// Runs `ffmpeg -v error -y <arguments>` where the literal `INPUT` and `OUTPUT` arguments stand for
    /// temporary files holding `input` and what ffmpeg writes; answers the output bytes.
    public static func convert(_ input: [UInt8], arguments: [String], outputExtension: String = "raw") throws -> [UInt8] {
        try withFile(input, fileExtension: "in") { inputPath in
            try withFile([], fileExtension: outputExtension) { outputPath in
                let substituted = arguments.map { $0 == "INPUT" ? inputPath : $0 == "OUTPUT" ? outputPath : $0 }
                _ = try output(["ffmpeg", "-v", "error", "-y"] + substituted)
                return Array(try Data(contentsOf: URL(fileURLWithPath: outputPath)))
            }
        }
    }

    /// The first audio stream ffprobe finds in a file; throws when it finds none.
    public static func probeStream(path: String) throws -> [String: Any] {
        let stream = audioStream(try probe(path))
        guard !stream.isEmpty else { throw Failure(description: "ffprobe found no audio stream in \(path)") }
        return stream
    }
}
