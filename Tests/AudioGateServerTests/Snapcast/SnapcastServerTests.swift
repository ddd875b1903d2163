import AudioGateCore
import AudioGateTestSupport
import Foundation
import NIOCore
import Synchronization
import Testing

@testable import AudioGateServer

/// Debian's snapserver on loopback, reading a 1 kHz tone from a FIFO, with an empty config file and
/// a temporary data directory and HOME. Skipped where snapserver is not installed.
final class SnapserverProcess {
    let directory: URL
    let port: Int
    private let process = Process()
    private let feeder: Thread
    /// Yields once snapserver has its stream port listening; ends if it exits first.
    private let started: AsyncStream<Void>

    init(codec: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("snapserver-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let fifo = directory.appendingPathComponent("fifo").path
        guard mkfifo(fifo, 0o600) == 0 else { throw CocoaError(.fileWriteUnknown) }
        guard FileManager.default.createFile(atPath: directory.appendingPathComponent("snapserver.conf").path, contents: Data())
        else { throw CocoaError(.fileWriteUnknown) }
        port = Self.freePort()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/snapserver")
        process.arguments = [
            "-c", directory.appendingPathComponent("snapserver.conf").path, "--server.datadir=\(directory.path)",
            "--stream.source", "pipe://\(fifo)?name=test&codec=\(codec)&sampleformat=48000:16:2",
            "--stream.bind_to_address", "127.0.0.1", "--stream.port", "\(port)", "--tcp.enabled", "false",
            "--http.enabled", "false", "--logging.sink=stdout", "--logging.filter=*:info",
        ]
        process.environment = ["HOME": directory.path, "PATH": "/usr/bin:/bin"]
        // snapserver logs its thread count once its stream server listens; the log is read to the end
        // so the pipe never fills.
        let (started, continuation) = AsyncStream<Void>.makeStream()
        self.started = started
        let output = Pipe()
        process.standardOutput = output
        let log = Mutex((text: "", listening: false))
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                continuation.finish()
                return
            }
            let listening = log.withLock { log in
                guard !log.listening else { return false }
                log.text += String(decoding: data, as: UTF8.self)
                log.listening = log.text.contains("Number of threads")
                return log.listening
            }
            if listening { continuation.yield() }
        }
        try process.run()
        // The FIFO is paced by snapserver's reads: a plain thread writes a 1 kHz tone at 0.3 until the FIFO closes.
        feeder = Thread {
            let handle = open(fifo, O_WRONLY)
            guard handle >= 0 else { return }
            defer { close(handle) }
            var position = 0
            var block = [Int16](repeating: 0, count: 960 * 2)
            while true {
                for frame in 0..<960 {
                    let value = Int16(0.3 * 32767 * sin(2 * Double.pi * 1000 * Double(position + frame) / 48000))
                    block[2 * frame] = value
                    block[2 * frame + 1] = value
                }
                position += 960
                let written = block.withUnsafeBytes { write(handle, $0.baseAddress, $0.count) }
                if written <= 0 { return }
            }
        }
        feeder.start()
    }

    /// Returns once snapserver listens on its stream port (or has exited).
    func waitUntilListening() async {
        for await _ in started { return }
    }

    static var installed: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/snapserver") }

    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func stop() {
        // snapserver started from the test process ignores SIGTERM (the signal is blocked in the
        // runner's threads and inherited): kill it outright, it holds nothing worth flushing.
        kill(process.processIdentifier, SIGKILL)
        process.waitForExit(seconds: 5)
        try? FileManager.default.removeItem(at: directory)
    }
}

@Suite("Snapcast against snapserver", .enabled(if: SnapserverProcess.installed), .serialized, .timeLimit(.minutes(1)))
struct SnapcastServerTests {
    /// Connects like the client does and collects `seconds` of decoded audio.
    private func receive(codec: String, seconds: Double) async throws -> (SnapcastDecoder?, [Int16], SnapcastClock) {
        let server = try SnapserverProcess(codec: codec)
        defer { server.stop() }
        let clock = SnapcastClock()
        await server.waitUntilListening()
        let channel = try await SnapcastClient.connect(host: "127.0.0.1", port: server.port, clock: clock)
        var decoder: SnapcastDecoder?
        var samples: [Int16] = []
        // A server that sends no audio ends the wait after 10 s instead of hanging the suite.
        let underlying = channel.channel
        let watchdog = Task {
            try await Task.sleep(for: .seconds(10))
            try await underlying.close()
        }
        defer { watchdog.cancel() }
        try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(.hello(id: 0, json: SnapcastClient.hello(name: "swift-test", id: "swift-test")))
            for try await message in inbound {
                switch message {
                case .codecHeader(let header):
                    decoder = try SnapcastDecoder(header: header)
                case .wireChunk(_, let payload):
                    guard let decoder else { continue }
                    try decoder.decode(payload) { samples.append(contentsOf: $0) }
                default:
                    break
                }
                if let format = decoder?.format, samples.count >= Int(seconds * Double(format.rate * format.channels)) { break }
            }
        }
        return (decoder, samples, clock)
    }

    @Test("FLAC, PCM, Opus and Ogg Vorbis chunks decode to the 1 kHz tone at 48 kHz stereo", arguments: ["flac", "pcm", "opus", "ogg"])
    func decode(codec: String) async throws {
        let (decoder, samples, clock) = try await receive(codec: codec, seconds: 1.5)
        let format = try #require(decoder?.format)
        try #require(samples.count >= 72000 * format.channels, "\(codec): only \(samples.count) samples in 10 s")
        #expect(format.rate == 48000 && format.channels == 2)
        // The second half second, left channel: past any codec's start-up.
        let left = stride(from: 0, to: samples.count, by: 2).map { Float(samples[$0]) / 32768 }
        let tail = Array(left[(left.count - 24000)...])
        let frequency = Goertzel.dominantFrequency(tail, rate: 48000, near: 1000)
        #expect(abs(frequency - 1000) < 1, "\(codec): \(frequency) Hz")
        let level = Goertzel.amplitude(tail, frequency: 1000, rate: 48000)
        #expect(abs(20 * log10(level / 0.3)) < 1, "\(codec): amplitude \(level)")
        let right = stride(from: 1, to: samples.count, by: 2).map { Float(samples[$0]) / 32768 }
        #expect(zip(left.suffix(1000), right.suffix(1000)).allSatisfy { abs($0 - $1) < 0.05 }, "\(codec): channels differ")
        // snapserver stamps with the same CLOCK_MONOTONIC on loopback: the offset is ~0.
        #expect(clock.count > 10)
        #expect(abs(clock.diffMicroseconds) < 300, "offset \(clock.diffMicroseconds) µs")
    }
}
