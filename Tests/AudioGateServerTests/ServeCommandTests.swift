import AudioGateTestSupport
import Foundation
import Testing

/// The real `audiogate serve` binary facing a device name it can never open.
@Suite("serve command", .serialized)
struct ServeCommandTests {
    /// Runs the binary with `arguments`, waits at most `seconds`, and answers its exit status and stderr.
    static func run(_ arguments: [String], seconds: Double, environment: [String: String] = [:]) throws -> (status: Int32?, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestServer.binary)
        process.arguments = arguments
        // Recordings of a server under test go to a scratch folder, never the user's home.
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("audiogate-serve-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        process.environment = ProcessInfo.processInfo.environment.merging(["AUDIOGATE_DATA_DIR": data.path]) { $1 }
            .merging(environment) { $1 }
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        process.waitForExit(seconds: seconds)
        if process.isRunning {
            process.terminate()
            process.waitForExit()
            return (nil, String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        }
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (process.terminationStatus, text)
    }

    @Test("an unknown device name exits at once, non-zero, naming it and the known devices")
    func unknownDevice() throws {
        try #require(FileManager.default.isExecutableFile(atPath: TestServer.binary), "build the server first: swift build")
        for flag in ["--device", "--capture-device", "--playback-device"] {
            let (status, stderr) = try Self.run(["serve", flag, "no_such_pcm", "--port", "8799"], seconds: 10)
            #expect(status == 2, "\(flag): \(stderr)")
            #expect(stderr.contains("no_such_pcm"), "\(stderr)")
            #expect(stderr.contains("loopback") && stderr.contains("pulse"), "the known devices are listed: \(stderr)")
        }
    }

    @Test("a known device that is absent right now is waited for, with a log line saying so")
    func absentDevice() throws {
        try #require(FileManager.default.isExecutableFile(atPath: TestServer.binary), "build the server first: swift build")
        let port = 20000 + Int(getpid() % 20000) + 7
        let (status, stderr) = try Self.run(
            ["serve", "--capture-device", "plughw:CARD=NoSuchUSB,DEV=0", "--playback-device", "loopback", "--port", "\(port)"],
            seconds: 3)
        #expect(status == nil, "it keeps running: \(stderr)")
        #expect(stderr.contains("capture device 'plughw:CARD=NoSuchUSB,DEV=0' unavailable; waiting for it"), "\(stderr)")
    }

    @Test("--device-idle-ms out of range is refused at once with the flag named")
    func badIdle() throws {
        try #require(FileManager.default.isExecutableFile(atPath: TestServer.binary), "build the server first: swift build")
        for value in ["-1", "3600001"] {
            let (status, stderr) = try Self.run(
                ["serve", "--device", "loopback", "--device-idle-ms=\(value)", "--port", "8799"], seconds: 10)
            #expect(status != nil && status != 0, "\(value) was accepted: \(stderr)")
            #expect(stderr.contains("--device-idle-ms must be 0 (never stop) to 3600000"), "\(stderr)")
        }
    }

    @Test("a bad --snapcast-server, stream name or latency is refused at once with the flag named")
    func badSnapcast() throws {
        try #require(FileManager.default.isExecutableFile(atPath: TestServer.binary), "build the server first: swift build")
        let cases = [
            (["--snapcast-server", "music:99999"], "--snapcast-server must be HOST or HOST:PORT"),
            (["--snapcast-server", "music", "--snapcast-stream", "no spaces"], "--snapcast-stream must be"),
            (["--snapcast-server", "music", "--snapcast-latency-ms=-5"], "--snapcast-latency-ms must be 0-10000"),
        ]
        for (flags, message) in cases {
            let (status, stderr) = try Self.run(["serve", "--device", "loopback", "--port", "8799"] + flags, seconds: 10)
            #expect(status == 2, "\(flags) was accepted: \(stderr)")
            #expect(stderr.contains(message), "\(stderr)")
        }
    }

    @Test("a bad --sendspin-server or --sendspin-port, both at once, a bad stream name, output delay, codec list or pairing code is refused at once, flags and variables alike")
    func badSendspin() throws {
        try #require(FileManager.default.isExecutableFile(atPath: TestServer.binary), "build the server first: swift build")
        let server = ["--sendspin-server", "ws://127.0.0.1:8927/sendspin"]
        let cases: [([String], [String: String], String)] = [
            (["--sendspin-server", "http://music/sendspin"], [:], "--sendspin-server must be ws://HOST[:PORT]/PATH"),
            ([], ["AUDIOGATE_SENDSPIN_SERVER": "music:8927"], "--sendspin-server must be ws://HOST[:PORT]/PATH"),
            (server + ["--sendspin-stream", "no spaces"], [:], "--sendspin-stream must be"),
            (server + ["--sendspin-output-delay-ms=5001"], [:], "--sendspin-output-delay-ms must be 0-5000"),
            (server, ["AUDIOGATE_SENDSPIN_OUTPUT_DELAY_MS": "soon"], "AUDIOGATE_SENDSPIN_OUTPUT_DELAY_MS must be an integer"),
            (server + ["--sendspin-codecs", "mp3"], [:], "--sendspin-codecs takes pcm, flac and opus"),
            (server + ["--sendspin-codecs", "opus"], [:], "--sendspin-codecs must list pcm or flac"),
            (["--sendspin-port", "host:port"], [:], "--sendspin-port must be PORT or HOST:PORT"),
            ([], ["AUDIOGATE_SENDSPIN_PORT": "70000"], "--sendspin-port must be PORT or HOST:PORT with a port of 1-65535"),
            (server + ["--sendspin-port", "8928"], [:], "--sendspin-server and --sendspin-port are two ways"),
            (server + ["--sendspin-pairing-code", "1234567"], [:], "--sendspin-pairing-code must be exactly 8 digits"),
            (server, ["AUDIOGATE_SENDSPIN_PAIRING_CODE": "1234-5678"], "--sendspin-pairing-code must be exactly 8 digits"),
        ]
        for (flags, environment, message) in cases {
            let (status, stderr) = try Self.run(
                ["serve", "--device", "loopback", "--port", "8799"] + flags, seconds: 10, environment: environment)
            #expect(status == 2, "\(flags) \(environment) was accepted: \(stderr)")
            #expect(stderr.contains(message), "\(stderr)")
        }
    }

    @Test("a non-loopback --host without a token exits 2 saying how to pass one; bad token sources too")
    func exposedWithoutToken() throws {
        try #require(FileManager.default.isExecutableFile(atPath: TestServer.binary), "build the server first: swift build")
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("audiogate-token-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let empty = scratch.appendingPathComponent("empty").path
        _ = FileManager.default.createFile(atPath: empty, contents: Data("\n".utf8))
        let good = scratch.appendingPathComponent("token").path
        _ = FileManager.default.createFile(atPath: good, contents: Data("s3cret\n".utf8))
        let cases = [
            (["--host", "0.0.0.0"], "--insecure-no-token"),
            (["--host", "192.0.2.1"], "pass --token-file FILE"),
            (["--token", "a", "--token-file", good], "not both"),
            (["--token-file", empty], "the token is empty"),
            (["--token-file", scratch.appendingPathComponent("missing").path], "cannot be read"),
            (["--token", "has space"], "printable ASCII without spaces"),
        ]
        for (flags, message) in cases {
            let (status, stderr) = try Self.run(["serve", "--device", "loopback", "--port", "8799"] + flags, seconds: 10)
            #expect(status == 2, "\(flags) was accepted: \(stderr)")
            #expect(stderr.contains(message), "\(flags): \(stderr)")
        }
    }

    @Test("--token-file: the file's first line is the token, and it guards the API")
    func tokenFile() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: TestServer.binary), "build the server first: swift build")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("audiogate-token-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: file, contents: Data("fi1e-token\n".utf8), attributes: [.posixPermissions: 0o600])
        defer { try? FileManager.default.removeItem(atPath: file) }
        let port = 20000 + Int(getpid() % 20000) + 11
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestServer.binary)
        process.arguments = ["serve", "--device", "loopback", "--port", "\(port)", "--token-file", file]
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("audiogate-serve-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        process.environment = ProcessInfo.processInfo.environment.merging(["AUDIOGATE_DATA_DIR": data.path]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            process.terminate()
            process.waitForExit()
        }
        let up = await Poll.until(seconds: 10) { (try? Curl.request(port: port, path: "/healthz").status) == 200 }
        try #require(up != nil, "the server answers")
        #expect(try Curl.request(port: port, path: "/v1/info").status == 401)
        #expect(try Curl.request(port: port, path: "/v1/info", headers: ["Authorization: Bearer fi1e-token"]).status == 200)
        #expect(try Curl.request(port: port, path: "//v1/info").status == 401)
    }

    @Test("a limit flag out of range is refused at once with the flag named")
    func badLimits() throws {
        try #require(FileManager.default.isExecutableFile(atPath: TestServer.binary), "build the server first: swift build")
        let cases = [
            ("--max-connections=7", "--max-connections must be 8-100000"),
            ("--max-decoders=0", "--max-decoders must be 1-1024"),
            ("--max-body-mb=0", "--max-body-mb must be 1-65536"),
            ("--max-say-seconds=3601", "--max-say-seconds must be 1-3600"),
            ("--max-pending-marks=0", "--max-pending-marks must be 1-65536"),
        ]
        for (flag, message) in cases {
            let (status, stderr) = try Self.run(["serve", "--device", "loopback", flag, "--port", "8799"], seconds: 10)
            #expect(status != nil && status != 0, "\(flag) was accepted: \(stderr)")
            #expect(stderr.contains(message), "\(stderr)")
        }
        let (status, stderr) = try Self.run(
            ["serve", "--device", "loopback", "--port", "8799"], seconds: 10, environment: ["AUDIOGATE_MAX_CONNECTIONS": "many"])
        #expect(status != nil && status != 0, "a bad variable was accepted: \(stderr)")
        #expect(stderr.contains("AUDIOGATE_MAX_CONNECTIONS must be a whole number"), "\(stderr)")
    }
}
