import Foundation

/// A browser-like client with full control of Host and Origin: curl, run as a separate process.
enum Curl {
    struct Result {
        var status: Int
        var headers: String
        var body: String
    }

    /// Runs curl against 127.0.0.1:`port` and returns the status line's code, headers and body.
    /// An accepted WebSocket upgrade keeps the connection open: pass a short `maxTime` to read its status.
    /// `options` go to curl as they are (e.g. `-T FILE`).
    static func request(
        port: Int, path: String, method: String = "GET", headers: [String] = [], body: String? = nil, maxTime: Double = 5,
        options: [String] = []
    ) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = ["curl", "-s", "-i", "--max-time", "\(maxTime)", "-X", method]
        for header in headers { arguments += ["-H", header] }
        if let body { arguments += ["--data-binary", body] }
        arguments += options
        arguments.append("http://127.0.0.1:\(port)\(path)")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitForExit()
        let text = String(decoding: data, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let head = parts.first ?? ""
        let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return Result(status: status, headers: head, body: parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    /// A chunked POST whose body is written while curl sends it (`-T -`), as a piped TTS response is.
    final class Upload {
        let process = Process()
        let input = Pipe()
        let output = Pipe()

        /// Starts curl POSTing standard input to 127.0.0.1:`port``path` with `contentType`.
        init(port: Int, path: String, contentType: String, maxTime: Double) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "curl", "-s", "--max-time", "\(maxTime)", "-X", "POST", "-T", "-", "-H", "Content-Type: \(contentType)",
                "http://127.0.0.1:\(port)\(path)",
            ]
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        /// Sends more of the body.
        func write(_ bytes: some Collection<UInt8>) {
            input.fileHandleForWriting.write(Data(bytes))
        }

        /// Ends the body and returns the answer's bytes and its JSON object (empty when it is not one).
        func finish() async throws -> (body: Data, json: [String: Any]) {
            try input.fileHandleForWriting.close()
            let body = output.fileHandleForReading.readDataToEndOfFile()
            for _ in 0..<200 where process.isRunning { try await Task.sleep(for: .milliseconds(10)) }
            return (body, (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:])
        }
    }

    /// Headers of a WebSocket upgrade request.
    static let upgrade = [
        "Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
    ]
}
