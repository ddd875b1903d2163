import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@Suite("Wyoming services on the test card", .serialized)
struct WyomingLiveTests {
    static func make() -> (AudioGateServer, some ApplicationProtocol) {
        TestServer.make(
            TestServer.configuration {
                $0.wyoming.micPort = 0
                $0.wyoming.sndPort = 0
            })
    }

    /// Reads events until `done` holds for the list or `seconds` pass.
    static func collect(
        _ inbound: NIOAsyncChannelInboundStream<WyomingEvent>, seconds: Double,
        until done: ([WyomingEvent]) -> Bool
    ) async throws -> [WyomingEvent] {
        var events: [WyomingEvent] = []
        let deadline = MonotonicClock.nowMilliseconds() + seconds * 1000
        for try await event in inbound {
            events.append(event)
            if done(events) || MonotonicClock.nowMilliseconds() > deadline { break }
        }
        return events
    }

    @Test("mic: audio-start, then 1024-frame chunks of 16 kHz s16le mono carrying the card's 1 kHz tone; describe answers info")
    func micTone() async throws {
        let (server, app) = Self.make()
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        try await app.test(.live) { _ in
            let port = try await WyomingTestClient.port(of: server.wyoming[0])
            try await RealTime.retryingOnSteal {
                let client = try await WyomingTestClient.connect(port: port)
                try await client.channel.executeThenClose { inbound, outbound in
                    try await outbound.write(WyomingEvent(type: "describe"))
                    // 3 s of audio, and the info answer somewhere among it.
                    let events = try await Self.collect(inbound, seconds: 10) { events in
                        events.filter { $0.type == "audio-chunk" }.count >= 47 && events.contains { $0.type == "info" }
                    }
                    let start = try #require(events.first)
                    #expect(start.type == "audio-start")
                    #expect(start.data["rate"]?.int == 16000 && start.data["width"]?.int == 2 && start.data["channels"]?.int == 1)
                    let info = try #require(events.first { $0.type == "info" })
                    guard case .array(let mics)? = info.data["mic"], case .object(let mic)? = mics.first else {
                        throw WyomingTestFailure("info has no mic program: \(info.data)")
                    }
                    #expect(mic["installed"] == .bool(true))
                    #expect(mic["attribution"]?.object?["name"] == .string("audiogate"))
                    let format = try #require(mic["mic_format"]?.object)
                    #expect(format["rate"]?.int == 16000 && format["width"]?.int == 2 && format["channels"]?.int == 1)
                    #expect(info.data["snd"] == .array([]))

                    let chunks = events.filter { $0.type == "audio-chunk" }
                    #expect(chunks.allSatisfy { $0.payload?.readableBytes == 2048 && $0.data["rate"]?.int == 16000 })
                    let stamps = chunks.compactMap { $0.data["timestamp"]?.int }
                    #expect(stamps == (0..<chunks.count).map { $0 * 64 }, "timestamps \(stamps.prefix(8))")
                    let pcm = chunks.flatMap { Array($0.payload!.readableBytesView) }
                    let samples = Array(pcm.samples(.s16le).dropFirst(8000))
                    let frequency = Goertzel.dominantFrequency(samples, rate: 16000, near: CaptureTonePlayer.frequency)
                    try SignalCheckFailure.require(abs(frequency - CaptureTonePlayer.frequency) < 1, "\(frequency) Hz")
                    try SignalCheckFailure.require(Goertzel.power(samples, frequency: 1000, rate: 16000) > -12, "tone power \(Goertzel.power(samples, frequency: 1000, rate: 16000)) dB")
                }
            }
        }
    }

    @Test("snd: describe answers a snd program; a 1.5 s 440 Hz tone in 1024-sample chunks is heard whole, then played")
    func sndPlayed() async throws {
        let (server, app) = Self.make()
        try await app.test(.live) { _ in
            let micPort = try await WyomingTestClient.port(of: server.wyoming[0])
            let sndPort = try await WyomingTestClient.port(of: server.wyoming[1])
            try await RealTime.retryingOnSteal {
                let listener = try await WyomingTestClient.connect(port: micPort)
                let speaker = try await WyomingTestClient.connect(port: sndPort)
                try await listener.channel.executeThenClose { micInbound, _ in
                    // The mic listens throughout: 1 s before the tone, the tone, and after it.
                    async let heard = Self.collect(micInbound, seconds: 5) { _ in false }
                    let elapsed = try await speaker.channel.executeThenClose { inbound, outbound in
                        var events = inbound.makeAsyncIterator()
                        try await outbound.write(WyomingEvent(type: "describe"))
                        let info = try #require(try await events.next())
                        #expect(info.type == "info")
                        guard case .array(let programs)? = info.data["snd"], case .object(let snd)? = programs.first else {
                            throw WyomingTestFailure("info has no snd program: \(info.data)")
                        }
                        #expect(snd["snd_format"]?.object?["rate"]?.int == 22050)
                        #expect(snd["installed"] == .bool(true))
                        try await Task.sleep(for: .seconds(1))

                        let format: [String: WyomingValue] = ["rate": 22050, "width": 2, "channels": 1]
                        let tone = Signal.sine(frequency: 440, rate: 22050, seconds: 1.5, amplitude: 0.5)
                        let pcm = SampleConversion.encode(tone, format: .s16le)
                        let started = MonotonicClock.nowMilliseconds()
                        try await outbound.write(WyomingEvent(type: "audio-start", data: format))
                        for offset in stride(from: 0, to: pcm.count, by: 2048) {
                            let payload = ByteBuffer(bytes: pcm[offset..<min(offset + 2048, pcm.count)])
                            try await outbound.write(WyomingEvent(type: "audio-chunk", data: format, payload: payload))
                        }
                        try await outbound.write(WyomingEvent(type: "audio-stop"))
                        let played = try await events.next()
                        #expect(played?.type == "played")
                        return MonotonicClock.nowMilliseconds() - started
                    }
                    // Heard means all 1.5 s left the speaker first, and not much later.
                    guard elapsed > 1450, elapsed < 3000 else { throw WyomingTestFailure("played after \(Int(elapsed)) ms") }

                    // Every 64 ms chunk the mic heard, by whether 440 Hz dominates it.
                    let chunks = try await heard.filter { $0.type == "audio-chunk" }
                    let loud = chunks.map { chunk -> Bool in
                        let samples = Array(chunk.payload!.readableBytesView).samples(.s16le)
                        return Goertzel.power(samples, frequency: 440, rate: 16000) > -20
                    }
                    let first = try #require(loud.firstIndex(of: true), "the tone was never heard")
                    let last = loud.lastIndex(of: true)!
                    let span = last - first + 1
                    // 1.5 s is 23.4 chunks; the edges may fall into a chunk either side.
                    guard (23...25).contains(span), loud[first...last].allSatisfy({ $0 }) else {
                        throw WyomingTestFailure("tone heard over \(span) chunks with holes: \(loud[first...last].filter { !$0 }.count)")
                    }
                }
            }
        }
    }

    /// Sends `bytes` and reads until the server closes the connection; true when it did within `seconds`.
    static func closedByServer(port: Int, sending bytes: String, seconds: Double = 5) async throws -> Bool {
        let channel = try await WyomingTestClient.raw(port: port)
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: bytes))
            return try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    do {
                        for try await _ in inbound {}
                    } catch {}
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(seconds))
                    return false
                }
                defer { group.cancelAll() }
                return try await group.next() ?? false
            }
        }
    }

    @Test("garbage, a 100 MB payload_length, unknown events and bad audio close only their connection; a listening mic client loses nothing")
    func hostileInput() async throws {
        let (server, app) = Self.make()
        try await app.test(.live) { client in
            let micPort = try await WyomingTestClient.port(of: server.wyoming[0])
            let sndPort = try await WyomingTestClient.port(of: server.wyoming[1])
            try await RealTime.retryingOnSteal {
                let listener = try await WyomingTestClient.connect(port: micPort)
                try await listener.channel.executeThenClose { micInbound, _ in
                    async let heard = Self.collect(micInbound, seconds: 10) { events in
                        events.filter { $0.type == "audio-chunk" }.count >= 60
                    }
                    // The hostile connections come while the listener is receiving.
                    _ = await Poll.until(seconds: 5) { (server.engine.captureHub.subscribers.first?.sentChunks ?? 0) > 0 }
                    // A half header is left hanging on each port while the rest goes on.
                    let halfMic = try await WyomingTestClient.plain(port: micPort)
                    let halfSnd = try await WyomingTestClient.plain(port: sndPort)
                    try await halfMic.writeAndFlush(ByteBuffer(string: #"{"type":"aud"#))
                    try await halfSnd.writeAndFlush(ByteBuffer(string: #"{"type":"audio-chunk","payload_length":4"#))
                    let hostile = [
                        "garbage garbage\n",
                        #"{"type":"audio-chunk","payload_length":100000000}"# + "\n",
                        #"{"type":"no-such-event"}"# + "\n",
                        String(repeating: "A", count: 100_000),
                        #"{"type":"audio-chunk","data":{"rate":16000,"width":7,"channels":1},"payload_length":2}"# + "\nab",
                        #"{"type":"audio-start","data":{"rate":5,"width":2,"channels":1}}"# + "\n",
                        // 2 s of silence, then more audio-stops than may wait for played.
                        #"{"type":"audio-chunk","data":{"rate":16000,"width":2,"channels":1},"payload_length":64000}"#
                            + "\n" + String(repeating: "\u{0}", count: 64000)
                            + String(repeating: #"{"type":"audio-stop"}"# + "\n", count: 300),
                    ]
                    for port in [micPort, sndPort] {
                        for bytes in hostile {
                            // The mic takes no audio, so only the framing lines apply to it.
                            if port == micPort, bytes.contains("width") || bytes.contains("rate") { continue }
                            let closed = try await Self.closedByServer(port: port, sending: bytes)
                            #expect(closed, "port \(port == micPort ? "mic" : "snd") kept \(bytes.prefix(50))")
                        }
                    }
                    // The HTTP side is untouched and a new Wyoming client is served.
                    try await client.execute(uri: "/v1/status", method: .get) { response in
                        #expect(response.status == .ok)
                    }
                    let fresh = try await WyomingTestClient.connect(port: sndPort)
                    try await fresh.channel.executeThenClose { inbound, outbound in
                        try await outbound.write(WyomingEvent(type: "describe"))
                        var iterator = inbound.makeAsyncIterator()
                        #expect(try await iterator.next()?.type == "info")
                    }
                    // Within the idle timeout (60 s here) a half header is no reason to close.
                    #expect(halfMic.isActive && halfSnd.isActive, "a half header was closed early")
                    try? await halfMic.close()
                    try? await halfSnd.close()

                    // The listener's chunks kept coming, one every 64 ms, none missing.
                    let chunks = try await heard.filter { $0.type == "audio-chunk" }
                    let stamps = chunks.compactMap { $0.data["timestamp"]?.int }
                    guard chunks.count == 60, stamps == (0..<chunks.count).map({ $0 * 64 }) else {
                        throw WyomingTestFailure("listener got \(chunks.count) chunks; timestamps \(stamps.prefix(10))...")
                    }
                }
            }
        }
    }

    @Test("--idle-timeout 1: part of an event left hanging is closed after it; a listening mic client and a quiet snd client stay")
    func idleTimeout() async throws {
        let (server, app) = TestServer.make(
            TestServer.configuration {
                $0.wyoming.micPort = 0
                $0.wyoming.sndPort = 0
                $0.limits.idleTimeoutSeconds = 1
            })
        try await app.test(.live) { client in
            let micPort = try await WyomingTestClient.port(of: server.wyoming[0])
            let sndPort = try await WyomingTestClient.port(of: server.wyoming[1])
            try await RealTime.retryingOnSteal {
                let listener = try await WyomingTestClient.connect(port: micPort)
                let quiet = try await WyomingTestClient.connect(port: sndPort)
                try await listener.channel.executeThenClose { micInbound, micOutbound in
                    try await micOutbound.write(WyomingEvent(type: "describe"))
                    // 3 s of audio: three times the timeout.
                    async let heard = Self.collect(micInbound, seconds: 10) { events in
                        events.filter { $0.type == "audio-chunk" }.count >= 47
                    }
                    try await quiet.channel.executeThenClose { sndInbound, sndOutbound in
                        var answers = sndInbound.makeAsyncIterator()
                        try await sndOutbound.write(WyomingEvent(type: "describe"))
                        #expect(try await answers.next()?.type == "info")
                        let started = MonotonicClock.nowMilliseconds()
                        async let halfHeader = Self.closedByServer(port: micPort, sending: #"{"type":"descr"#)
                        async let halfPayload = Self.closedByServer(
                            port: sndPort, sending: #"{"type":"audio-chunk","payload_length":4}"# + "\nab")
                        let (micClosed, sndClosed) = try await (halfHeader, halfPayload)
                        let elapsed = MonotonicClock.nowMilliseconds() - started
                        #expect(micClosed && sndClosed, "half an event kept open (mic \(micClosed), snd \(sndClosed))")
                        guard elapsed >= 950, elapsed < 3000 else { throw WyomingTestFailure("closed after \(Int(elapsed)) ms") }
                        // The snd client, quiet since its describe for longer than the timeout, is still answered.
                        try await Task.sleep(for: .seconds(1))
                        try await sndOutbound.write(WyomingEvent(type: "describe"))
                        #expect(try await answers.next()?.type == "info")
                    }
                    let stamps = try await heard.filter { $0.type == "audio-chunk" }.compactMap { $0.data["timestamp"]?.int }
                    guard stamps == (0..<47).map({ $0 * 64 }) else {
                        throw WyomingTestFailure("the listening mic client lost audio or was closed: \(stamps.count) chunks")
                    }
                }
            }
            // The server goes on: HTTP and a new Wyoming client.
            try await client.execute(uri: "/v1/status", method: .get) { response in
                #expect(response.status == .ok)
            }
            let fresh = try await WyomingTestClient.connect(port: micPort)
            try await fresh.channel.executeThenClose { inbound, _ in
                var events = inbound.makeAsyncIterator()
                let first = try await events.next()
                #expect(first?.type == "audio-start")
            }
        }
    }

    @Test("a WebSocket capture client receives every chunk while a Wyoming mic client listens")
    func beside() async throws {
        let (server, app) = Self.make()
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        try await app.test(.live) { client in
            let micPort = try await WyomingTestClient.port(of: server.wyoming[0])
            try await RealTime.retryingOnSteal {
                let listener = try await WyomingTestClient.connect(port: micPort)
                try await listener.channel.executeThenClose { micInbound, _ in
                    // 4.5 s of Wyoming audio, overlapping the WebSocket client's 4 s.
                    async let heard = Self.collect(micInbound, seconds: 10) { events in
                        events.filter { $0.type == "audio-chunk" }.count >= 70
                    }
                    let stream = try await CaptureClient.receive(client, "rate=16000&chunk_ms=20&encoding=json", seconds: 4)
                    let seqs = stream.audio.map(\.seq)
                    guard stream.audio.count >= 190, seqs == (0..<UInt64(seqs.count)).map({ $0 }),
                        stream.events(ofType: "overrun").isEmpty
                    else {
                        throw WyomingTestFailure("WebSocket got \(stream.audio.count) chunks, seq gaps or overruns")
                    }
                    #expect(server.wyoming[0].clientCount == 1)
                    let stamps = try await heard.filter { $0.type == "audio-chunk" }.compactMap { $0.data["timestamp"]?.int }
                    try SignalCheckFailure.require(stamps == (0..<70).map { $0 * 64 }, "the Wyoming client's audio has a gap or ended early")
                }
            }
        }
    }

    /// Sends a tone as a TTS service would and waits for `played`; returns ms from audio-start to it.
    static func play(
        frequency: Double, seconds: Double, on client: WyomingTestClient
    ) async throws -> Double {
        try await client.channel.executeThenClose { inbound, outbound in
            let format: [String: WyomingValue] = ["rate": 22050, "width": 2, "channels": 1]
            let tone = Signal.sine(frequency: frequency, rate: 22050, seconds: seconds, amplitude: 0.3)
            let pcm = SampleConversion.encode(tone, format: .s16le)
            let started = MonotonicClock.nowMilliseconds()
            try await outbound.write(WyomingEvent(type: "audio-start", data: format))
            for offset in stride(from: 0, to: pcm.count, by: 2048) {
                let payload = ByteBuffer(bytes: pcm[offset..<min(offset + 2048, pcm.count)])
                try await outbound.write(WyomingEvent(type: "audio-chunk", data: format, payload: payload))
            }
            try await outbound.write(WyomingEvent(type: "audio-stop"))
            var events = inbound.makeAsyncIterator()
            guard try await events.next()?.type == "played" else { throw WyomingTestFailure("no played") }
            return MonotonicClock.nowMilliseconds() - started
        }
    }

    @Test("two snd clients at once play on their own streams, mixed: both tones sound together and both get played")
    func twoSpeakers() async throws {
        let (server, app) = Self.make()
        try await app.test(.live) { client in
            let micPort = try await WyomingTestClient.port(of: server.wyoming[0])
            let sndPort = try await WyomingTestClient.port(of: server.wyoming[1])
            try await RealTime.retryingOnSteal {
                let listener = try await WyomingTestClient.connect(port: micPort)
                try await listener.channel.executeThenClose { micInbound, _ in
                    async let heard = Self.collect(micInbound, seconds: 5) { _ in false }
                    try await Task.sleep(for: .seconds(1))
                    let first = try await WyomingTestClient.connect(port: sndPort)
                    let second = try await WyomingTestClient.connect(port: sndPort)
                    // Both connections hold their streams before either plays.
                    _ = await Poll.until(seconds: 2) { server.wyoming[1].clientCount == 2 }
                    async let a = Self.play(frequency: 440, seconds: 1.5, on: first)
                    async let b = Self.play(frequency: 660, seconds: 1.5, on: second)
                    let (playedA, playedB) = try await (a, b)
                    // Mixed, not queued one after the other: both end within 3 s, not 3 s + 1.5 s.
                    guard playedA < 3000, playedB < 3000 else {
                        throw WyomingTestFailure("played after \(Int(playedA)) and \(Int(playedB)) ms")
                    }
                    let chunks = try await heard.filter { $0.type == "audio-chunk" }
                    let both = chunks.filter { chunk in
                        let samples = Array(chunk.payload!.readableBytesView).samples(.s16le)
                        return Goertzel.power(samples, frequency: 440, rate: 16000) > -26
                            && Goertzel.power(samples, frequency: 660, rate: 16000) > -26
                    }
                    // 1.5 s is 23 chunks; both tones together in at least 20 of them.
                    guard both.count >= 20 else { throw WyomingTestFailure("both tones in only \(both.count) chunks") }
                }
                try await client.execute(uri: "/v1/status", method: .get) { response in
                    #expect(response.status == .ok)
                }
            }
            #expect(server.engine.mixer.allStreams.allSatisfy { ["wyoming", "wyoming-2"].contains($0.name) })
        }
    }

    @Test("a mic client that stops reading loses its oldest audio, like a WebSocket client, and is live again after")
    func slowReader() async throws {
        // 48 kHz stereo 32-bit (384 KB/s) fills the socket buffers within the stall.
        let (server, app) = TestServer.make(
            TestServer.configuration {
                $0.wyoming.micPort = 0
                $0.wyoming.micRate = 48000
                $0.wyoming.micWidth = 4
                $0.wyoming.micChannels = 2
            })
        try await app.test(.live) { _ in
            let micPort = try await WyomingTestClient.port(of: server.wyoming[0])
            try await RealTime.retryingOnSteal {
                let listener = try await WyomingTestClient.connect(port: micPort)
                try await listener.channel.executeThenClose { inbound, _ in
                    var events = inbound.makeAsyncIterator()
                    let start = try #require(try await events.next())
                    #expect(start.data["rate"]?.int == 48000 && start.data["width"]?.int == 4 && start.data["channels"]?.int == 2)
                    while try await events.next()?.type != "audio-chunk" {}
                    try await Task.sleep(for: .seconds(5))
                    let queued = server.engine.captureHub.subscribers.map(\.queuedMilliseconds)
                    #expect(queued.allSatisfy { $0 <= 1000 }, "queued \(queued) ms")
                    var stamps: [Int] = []
                    var sizes = Set<Int>()
                    while stamps.count < 400, let event = try await events.next() {
                        if let stamp = event.data["timestamp"]?.int { stamps.append(stamp) }
                        if let payload = event.payload { sizes.insert(payload.readableBytes) }
                    }
                    #expect(sizes == [1024 * 8])
                    // 1024 frames at 48 kHz are 21.3 ms: steps of 21 or 22 ms, and the dropped audio as jumps.
                    let steps = zip(stamps, stamps.dropFirst()).map { $1 - $0 }
                    let jumps = steps.filter { !(21...22).contains($0) }
                    guard !jumps.isEmpty, jumps.allSatisfy({ $0 > 100 }), steps.suffix(100).allSatisfy({ (21...22).contains($0) })
                    else {
                        throw WyomingTestFailure("timestamp jumps \(jumps), last steps \(steps.suffix(10))")
                    }
                    let dropped = server.engine.captureHub.subscribers.first?.droppedMilliseconds ?? 0
                    #expect(server.engine.captureHub.subscribers.first?.transport == .wyoming)
                    #expect(abs(Double(jumps.reduce(0, +)) - dropped) < Double(jumps.count) * 25 + 25, "jumps \(jumps) vs dropped \(dropped) ms")
                }
            }
        }
    }
}
