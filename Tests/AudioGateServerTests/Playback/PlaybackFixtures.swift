import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import HummingbirdWSTesting
import WSClient
import NIOCore
import Synchronization

/// Records the test card's monitor with `parec` (48 kHz mono float) and knows when each sample was
/// played on the monotonic clock, so server events can be compared with what was heard.
final class PlaybackMonitor: Sendable {
    static let rate = 48000

    private struct State {
        var bytes: [UInt8] = []
        /// The earliest possible time of sample 0 seen so far (arrival time minus audio length).
        var originMs = Double.infinity
    }

    private let state = Mutex(State())
    private let process: Mutex<Process?> = Mutex(nil)

    init() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "parec", "--device=speaker.monitor", "--rate=\(Self.rate)", "--channels=1", "--format=float32le",
            "--latency-msec=5", "--raw",
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            guard !data.isEmpty else {
                // End of file: without this the handler would be called again at once, forever.
                handle.readabilityHandler = nil
                return
            }
            let now = MonotonicClock.nowMilliseconds()
            self.state.withLock { state in
                state.bytes.append(contentsOf: data)
                let samples = state.bytes.count / 4
                state.originMs = min(state.originMs, now - Double(samples) * 1000 / Double(Self.rate))
            }
        }
        try process.run()
        self.process.withLock { $0 = process }
    }

    /// Waits until the recorder delivers audio.
    func waitUntilRecording() async {
        await Poll.until(seconds: 3) { state.withLock { $0.bytes.count } > 4 * 2400 }
    }

    /// Stops recording.
    func stop() {
        process.withLock { process in
            if let process, process.isRunning {
                process.terminate()
                process.waitForExit(seconds: 1)
            }
            (process?.standardOutput as? Pipe)?.fileHandleForReading.readabilityHandler = nil
            process = nil
        }
    }

    deinit { stop() }

    /// Everything recorded so far.
    var samples: [Float] {
        let bytes = state.withLock { $0.bytes }
        return bytes.withUnsafeBytes { raw in
            (0..<(bytes.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
    }

    /// Monotonic time (ms) at which sample `index` was played.
    func time(ofSample index: Int) -> Double {
        state.withLock { $0.originMs } + Double(index) * 1000 / Double(Self.rate)
    }

    /// The sample played at monotonic time `ms`.
    func sample(atTime ms: Double) -> Int {
        Int(((ms - state.withLock { $0.originMs }) * Double(Self.rate) / 1000).rounded())
    }
}

/// Text messages a playback WebSocket received, with their arrival times.
final class PlaybackEventLog: Sendable {
    struct Entry: Sendable {
        var ms: Double
        var type: String
        var name: String?
        var id: String?
        var fields: [String: Double]
    }

    private let entries = Mutex<[Entry]>([])

    func add(_ text: String) {
        let now = MonotonicClock.nowMilliseconds()
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return }
        var fields: [String: Double] = [:]
        for (key, value) in object { if let number = value as? NSNumber { fields[key] = number.doubleValue } }
        let entry = Entry(ms: now, type: object["type"] as? String ?? "", name: object["name"] as? String, id: object["id"] as? String, fields: fields)
        entries.withLock { $0.append(entry) }
    }

    var all: [Entry] { entries.withLock { $0 } }

    func of(_ type: String) -> [Entry] { all.filter { $0.type == type } }

    /// Waits until `count` messages of `type` arrived; returns them.
    @discardableResult
    func wait(for type: String, count: Int = 1, seconds: Double = 10) async -> [Entry] {
        await Poll.until(seconds: seconds) { self.of(type).count >= count }
        return of(type)
    }
}

enum PlaybackClient {
    /// Opens `/v1/playback?query`, runs `send` while logging every text message, then closes.
    static func session(
        _ client: some TestClientProtocol, query: String = "",
        _ send: @escaping @Sendable (WebSocketOutboundWriter, PlaybackEventLog) async throws -> Void
    ) async throws -> PlaybackEventLog {
        let log = PlaybackEventLog()
        try await client.ws(query.isEmpty ? "/v1/playback" : "/v1/playback?\(query)") { inbound, outbound, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await send(outbound, log)
                    try await outbound.close(.normalClosure, reason: nil)
                }
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    if case .text(let text) = message { log.add(text) }
                }
                try await group.waitForAll()
            }
        }
        return log
    }

    /// Sends `samples` (mono floats) as binary frames of `chunkMs` in `format` (s16le unless told), at
    /// real-time pace with each send up to `jitterMs` late (not cumulative), or as fast as possible when
    /// `realTime` is false.
    static func send(
        _ samples: [Float], rate: Int, format: SampleFormat = .s16le, chunkMs: Int = 20, jitterMs: Double = 0,
        realTime: Bool = true, seed: UInt64 = 7, to outbound: WebSocketOutboundWriter
    ) async throws {
        let bytes = SampleConversion.encode(samples, format: format)
        let chunkBytes = rate * chunkMs / 1000 * format.bytesPerSample
        var generator = SeededGenerator(seed: seed)
        let start = MonotonicClock.nowMilliseconds()
        var offset = 0
        var index = 0
        while offset < bytes.count {
            if realTime {
                let jitter = Double(generator.next() % 1000) / 1000 * jitterMs
                let due = start + Double(index * chunkMs) + jitter
                let wait = due - MonotonicClock.nowMilliseconds()
                if wait > 0 { try await Task.sleep(for: .microseconds(Int(wait * 1000))) }
            }
            let end = min(bytes.count, offset + chunkBytes)
            try await outbound.write(.binary(ByteBuffer(bytes: bytes[offset..<end])))
            offset = end
            index += 1
        }
    }
}

/// Tone segments in a recording: runs where a 5 ms envelope stays above a threshold.
enum PlaybackAnalysis {
    /// The one tone segment in `samples`, checked for its length (within `toleranceMs`) and pitch (within 1 Hz).
    static func singleTone(
        _ samples: [Float], frequency: Double, expectedMs: Double, toleranceMs: Double
    ) throws -> Range<Int> {
        let found = segments(samples)
        try SignalCheckFailure.require(found.count == 1, "heard \(found.count) segments: a gap, or nothing")
        let heardMs = milliseconds(found[0].count)
        try SignalCheckFailure.require(abs(heardMs - expectedMs) < toleranceMs, "heard \(heardMs) ms")
        let pitch = Goertzel.dominantFrequency(Array(samples[found[0]]), rate: PlaybackMonitor.rate, near: frequency)
        try SignalCheckFailure.require(abs(pitch - frequency) < 1, "pitch \(pitch) Hz")
        return found[0]
    }

    static func segments(_ samples: [Float], rate: Int = PlaybackMonitor.rate, thresholdDBFS: Double = -30, minimumMs: Double = 30) -> [Range<Int>] {
        let window = rate / 200
        let threshold = Float(pow(10, thresholdDBFS / 20))
        var result: [Range<Int>] = []
        var start: Int?
        var index = 0
        while index + window <= samples.count {
            var peak: Float = 0
            for sample in samples[index..<(index + window)] { peak = max(peak, abs(sample)) }
            if peak >= threshold {
                if start == nil {
                    // Refine to the first loud sample of the window.
                    start = (index..<(index + window)).first { abs(samples[$0]) >= threshold } ?? index
                }
            } else if let begin = start {
                let end = (begin..<index).last { abs(samples[$0]) >= threshold }.map { $0 + 1 } ?? index
                if Double(end - begin) * 1000 / Double(rate) >= minimumMs { result.append(begin..<end) }
                start = nil
            }
            index += window
        }
        if let begin = start, Double(index - begin) * 1000 / Double(rate) >= minimumMs { result.append(begin..<index) }
        return result
    }

    static func milliseconds(_ samples: Int, rate: Int = PlaybackMonitor.rate) -> Double {
        Double(samples) * 1000 / Double(rate)
    }
}

extension TestServer {
    /// Waits until the playback device runs (the monitor only hears an open device).
    static func waitForPlayback(_ server: AudioGateServer) async {
        await Poll.until(seconds: 5) { server.engine.playback.monitor.snapshot.state == .running }
        // A sound server's new stream can take most of a second before it starts consuming what
        // it is given (seen with PulseAudio): measurements start once that has passed.
        try? await Task.sleep(for: .milliseconds(1000))
    }
}

enum PlaybackServer {
    /// A test server whose origin policy admits the test WebSocket client (it sends `Origin: ws://localhost`).
    static func make() -> (AudioGateServer, some ApplicationProtocol) {
        TestServer.make(TestServer.configuration { $0.allowedOrigins = ["ws://localhost"] })
    }

    /// Runs `body` against a live server whose playback device runs, with the monitor already
    /// recording; the whole attempt is retried once when the machine was stealing CPU.
    static func live(
        _ body: @Sendable (AudioGateServer, any TestClientProtocol, PlaybackMonitor) async throws -> Void
    ) async throws {
        try await RealTime.retryingOnSteal {
            let (server, app) = make()
            try await app.test(.live) { client in
                await TestServer.waitForPlayback(server)
                let monitor = try PlaybackMonitor()
                defer { monitor.stop() }
                await monitor.waitUntilRecording()
                try await body(server, client, monitor)
            }
        }
    }
}
