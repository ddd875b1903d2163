import AudioGateCore
import AudioGateTestSupport
import Foundation
import HummingbirdTesting
import HummingbirdWSTesting
import WSCore
import NIOCore
import Synchronization

/// A 1 kHz tone with a little seeded noise (so streams can be aligned sample-exactly), played into
/// the test card with `paplay` until stopped.
final class CaptureTonePlayer {
    static let frequency = 1000.0
    private let process = Process()

    /// The tone file, written once per test process (30 s; paplay is restarted per test).
    private static let file: String = {
        let rate = 48000
        let count = rate * 30
        var generator = SeededGenerator(seed: 42)
        var samples = [Float](repeating: 0, count: count)
        let step = 2 * Double.pi * frequency / Double(rate)
        for n in 0..<count {
            let noise = Double(generator.next() >> 11) / Double(1 << 53) - 0.5
            samples[n] = Float(0.4 * sin(step * Double(n % rate)) + 0.1 * noise)
        }
        let bytes = WAVFile.write(samples: samples, format: AudioFormat(rate: rate, channels: 1, sampleFormat: .s16le))
        let path = NSTemporaryDirectory() + "audiogate-capture-tone-\(getpid()).wav"
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }()

    init() throws {
        let path = Self.file
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["paplay", path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // paplay needs a moment to connect before audio reaches the sink.
        Thread.sleep(forTimeInterval: 0.4)
    }

    func stop() {
        // paplay drains its whole file on SIGTERM; SIGKILL stops the tone now.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitForExit(seconds: 1)
    }

    deinit { stop() }
}

/// A value shared between a WebSocket handler and the test.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<T: Sendable>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }

    var value: Value { mutex.withLock { $0 } }
}

/// Everything one capture WebSocket received.
struct CapturedStream: Sendable {
    struct Audio: Sendable {
        var seq: UInt64
        var timestampMs: Double
        var pcm: [UInt8]
        /// CLOCK_MONOTONIC ms at arrival.
        var arrivedMs: Double
    }

    var start: String?
    /// Binary chunks, concatenated.
    var binary: [UInt8] = []
    var binaryChunkSizes: [Int] = []
    var audio: [Audio] = []
    /// Text messages other than start and audio, in order, with the index of the next audio chunk.
    var events: [(index: Int, json: [String: any Sendable])] = []
    var firstChunkMs: Double?

    /// All audio bytes, whichever the encoding.
    var pcm: [UInt8] { binary.isEmpty ? audio.flatMap(\.pcm) : binary }

    var chunkCount: Int { binaryChunkSizes.count + audio.count }

    func events(ofType type: String) -> [[String: any Sendable]] {
        events.map(\.json).filter { $0["type"] as? String == type }
    }

    /// The voice detector's events: state (`speech` or `silence`) and capture time.
    var voiceEvents: [(state: String, ms: Double)] {
        events(ofType: "vad").map { (state: $0["state"] as? String ?? "", ms: $0["timestamp_ms"] as? Double ?? 0) }
    }

    /// The voice detector's events as `state@ms` from `originMs`, for failure messages and logs.
    func voiceEventsDescription(from originMs: Double) -> String {
        voiceEvents.map { "\($0.state)@\(Int($0.ms - originMs))" }.joined(separator: " ")
    }

    mutating func add(_ message: WebSocketMessage) {
        let now = MonotonicClock.nowMilliseconds()
        switch message {
        case .binary(let buffer):
            if firstChunkMs == nil { firstChunkMs = now }
            binary += Array(buffer: buffer)
            binaryChunkSizes.append(buffer.readableBytes)
        case .text(let text):
            guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return }
            switch object["type"] as? String {
            case "start":
                start = text
            case "audio":
                if firstChunkMs == nil { firstChunkMs = now }
                let pcm = Base64.decode(object["data"] as? String ?? "") ?? []
                audio.append(
                    Audio(
                        seq: (object["seq"] as? NSNumber)?.uint64Value ?? .max,
                        timestampMs: (object["timestamp_ms"] as? NSNumber)?.doubleValue ?? 0, pcm: pcm, arrivedMs: now))
            default:
                var sendable: [String: any Sendable] = [:]
                for (key, value) in object {
                    if let string = value as? String { sendable[key] = string }
                    if let number = value as? NSNumber { sendable[key] = number.doubleValue }
                }
                events.append((audio.count + binaryChunkSizes.count, sendable))
            }
        }
    }
}

enum CaptureClient {
    /// Receives from `/v1/capture?query` until `done` holds or `seconds` pass after the first message, then closes.
    ///
    /// `delayReading` keeps the client from reading at all for that long first (a stalled client).
    static func receive(
        _ client: some TestClientProtocol, _ query: String, seconds: Double, delayReading: Double = 0,
        until done: @escaping @Sendable (CapturedStream) -> Bool = { _ in false }
    ) async throws -> CapturedStream {
        let box = Locked(CapturedStream())
        try await client.ws("/v1/capture?\(query)") { inbound, _, _ in
            if delayReading > 0 { try await Task.sleep(for: .seconds(delayReading)) }
            // Opening the sound server's device takes a second or more when the server has just
            // started: the time counts from the first audio (or event) after `start`.
            var deadline: Double?
            for try await message in inbound.messages(maxSize: 1 << 22) {
                let now = MonotonicClock.nowMilliseconds()
                if deadline == nil, !Self.isStart(message) { deadline = now + seconds * 1000 }
                let finished = box.withLock { stream in
                    stream.add(message)
                    return done(stream)
                }
                if finished || now > deadline ?? .infinity { break }
            }
        }
        return box.value
    }

    static func isStart(_ message: WebSocketMessage) -> Bool {
        if case .text(let text) = message { return text.hasPrefix("{\"type\":\"start\"") }
        return false
    }
}

extension [UInt8] {
    /// Decodes little-endian PCM to floats.
    func samples(_ format: SampleFormat) -> [Float] { SampleConversion.decode(self, format: format) }
}

enum CaptureMemory {
    /// Resident set size of this process in bytes.
    static var residentBytes: Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
