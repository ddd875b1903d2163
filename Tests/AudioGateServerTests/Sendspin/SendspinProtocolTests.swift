import AudioGateCore
import Crypto
import Foundation
import Testing

@testable import AudioGateServer

/// The player's side of the Sendspin wire without a server: the time filter, the burst clock,
/// fragments, message decoding, the settings, the volume curve and the key file.
@Suite("Sendspin protocol")
struct SendspinProtocolTests {
    @Test("the time filter converges on a drifting offset and maps both ways")
    func timeFilter() throws {
        var filter = SendspinTimeFilter()
        #expect(!filter.isSynchronized)
        // The server runs 5_000_000 µs ahead and 20 ppm fast; measurements carry ±50 µs of noise.
        var generator = SystemRandomNumberGenerator()
        for step in 1...200 {
            let t = Int64(step) * 250_000
            let truth = 5_000_000 + Double(t) * 20e-6
            let noise = Double.random(in: -50...50, using: &generator)
            filter.update(measurement: Int64(truth + noise), maxError: 100, timeAdded: t)
        }
        #expect(filter.isSynchronized)
        let now: Int64 = 200 * 250_000
        let server = try #require(filter.serverTime(forClient: now))
        let expected = Double(now) + 5_000_000 + Double(now) * 20e-6
        #expect(abs(Double(server) - expected) < 60, "server time \(server) vs \(expected)")
        let back = try #require(filter.clientTime(forServer: server))
        #expect(abs(back - now) <= 1)
        #expect(filter.error < 100)
        // A time far past any clock maps to nothing rather than trapping.
        #expect(filter.clientTime(forServer: .max) == nil)
        #expect(filter.clientTime(forServer: .min) == nil)
    }

    @Test("a drift made of a few biased early measurements never dates a chunk seconds ahead")
    func timeFilterEarlyDrift() throws {
        var filter = SendspinTimeFilter()
        // Three answers from a busy server, biased the same way within their round trips, then
        // an exact one: the reference takes the step as -1242 ppm of drift, significant, which
        // puts a chunk 5 s ahead 6 ms off.
        let measurements: [(Int64, Int64)] = [(496, 600), (564, 600), (564, 600), (-23, 100)]
        for (index, (measurement, maxError)) in measurements.enumerated() {
            filter.update(measurement: measurement, maxError: maxError, timeAdded: Int64(index + 1) * 250_000)
        }
        #expect(abs(filter.drift) > SendspinTimeFilter.plausibleDrift)
        #expect(filter.effectiveDrift == 0)
        let now: Int64 = 4 * 250_000
        let local = try #require(filter.clientTime(forServer: now + 5_000_000))
        #expect(abs(local - (now + 5_000_000)) < 600, "5 s ahead lands \(local - now - 5_000_000) µs off")
        // A real 50 ppm, measured for long enough, is applied.
        var steady = SendspinTimeFilter()
        for step in 1...40 {
            let t = Int64(step) * 2_000_000
            steady.update(measurement: Int64((Double(t) * 50e-6).rounded()), maxError: 100, timeAdded: t)
        }
        #expect(abs(steady.effectiveDrift - 50e-6) < 5e-6, "applied drift \(steady.effectiveDrift)")
    }

    @Test("a measurement not later than the last one is skipped")
    func timeFilterMonotonic() {
        var filter = SendspinTimeFilter()
        filter.update(measurement: 100, maxError: 10, timeAdded: 1000)
        filter.update(measurement: 900, maxError: 10, timeAdded: 1000)
        #expect(filter.count == 1)
        #expect(filter.offset == 100)
    }

    /// A symmetric exchange sent at `t1` (µs) and answered at `now` (ns), the server `offset` ahead
    /// and 10 µs between its receive and transmit stamps.
    private func reply(_ t1: Int64, offset: Int64, now: UInt64) -> SendspinTimeReply {
        let received = t1 + offset + (Int64(now / 1000) - t1 - 10) / 2
        return SendspinTimeReply(clientTransmitted: t1, serverReceived: received, serverTransmitted: received + 10)
    }

    @Test("a burst sends eight requests, keeps the shortest round trip, and converges after two bursts")
    func clockBursts() throws {
        let clock = SendspinClock()
        var now: UInt64 = 10_000_000_000
        for burst in 0..<2 {
            #expect(clock.beginBurst(now: now) == .send)
            #expect(clock.beginBurst(now: now + 1000) == .busy)
            for exchange in 0..<SendspinClock.burstSize {
                let sent = Int64(now / 1000)
                // Round trips of 1000 µs, one of 100 µs.
                now += exchange == 3 ? 100_000 : 1_000_000
                let recorded = try clock.record(reply(sent, offset: 7_000_000, now: now), receivedAt: now)
                #expect(recorded.sendNext == (exchange < SendspinClock.burstSize - 1))
                #expect(recorded.synchronized == (burst == 1 && exchange == SendspinClock.burstSize - 1))
                #expect(recorded.moved == 0)
            }
            now += 250_000_000
        }
        #expect(clock.isSynchronized)
        let offset = try #require(clock.offsetMicroseconds)
        #expect(abs(offset - 7_000_000) < 60, "offset \(offset)")
        // A chunk stamped on the server's clock lands at the matching local time, less the delay.
        let local = try #require(try clock.localNanoseconds(forServer: 7_000_000 + 20_000_000, minus: 1000))
        #expect(abs(Int64(local) - 19_999_000_000) < 100_000)
        #expect(throws: SendspinError.self) { _ = try clock.localNanoseconds(forServer: .max, minus: 0) }
        #expect(try clock.localNanoseconds(forServer: 0, minus: 0) == nil)
    }

    /// One burst of eight answers 100 µs apart from a server `offset` µs ahead, begun at `now`;
    /// returns what its last answer did.
    private func burst(_ clock: SendspinClock, offset: Int64, now: inout UInt64) throws -> SendspinClock.Recorded {
        #expect(clock.beginBurst(now: now) == .send)
        var recorded = SendspinClock.Recorded()
        for _ in 0..<SendspinClock.burstSize {
            let sent = Int64(now / 1000)
            now += 100_000
            recorded = try clock.record(reply(sent, offset: offset, now: now), receivedAt: now)
        }
        now += 250_000_000
        return recorded
    }

    @Test("a server that comes back on the same clock is in sync from its first burst; another clock starts afresh")
    func clockCarried() throws {
        let clock = SendspinClock()
        var now: UInt64 = 10_000_000_000
        for _ in 0..<20 { _ = try burst(clock, offset: 7_000_000, now: &now) }
        #expect(clock.isSynchronized)
        // Back 5 s later, after an attempt that never got as far as a burst.
        now += 5_000_000_000
        clock.reset()
        #expect(!clock.isSynchronized)
        clock.reset()
        let resumed = try burst(clock, offset: 7_000_000, now: &now)
        #expect(resumed.synchronized && resumed.resumed)
        #expect(abs(try #require(clock.offsetMicroseconds) - 7_000_000) < 60)
        // A clock 50 ms away (another host, a reboot): the first burst does not agree.
        clock.reset()
        let moved = try burst(clock, offset: 7_050_000, now: &now)
        #expect(!moved.synchronized && !moved.resumed && !clock.isSynchronized)
        let fresh = try burst(clock, offset: 7_050_000, now: &now)
        #expect(fresh.synchronized && !fresh.resumed)
        #expect(abs(try #require(clock.offsetMicroseconds) - 7_050_000) < 60)
    }

    @Test("once synchronized, a burst that moves the estimate reports the move for the chunks already dated")
    func clockReportsMove() throws {
        let clock = SendspinClock()
        var now: UInt64 = 10_000_000_000
        var moves: [Double] = []
        // Two bursts at an offset of 7 s, then one finding the server 400 µs further ahead.
        for (burst, offset) in [7_000_000, 7_000_000, 7_000_400].enumerated() {
            #expect(clock.beginBurst(now: now) == .send)
            for _ in 0..<SendspinClock.burstSize {
                let sent = Int64(now / 1000)
                now += 100_000
                moves.append(try clock.record(reply(sent, offset: Int64(offset), now: now), receivedAt: now).moved)
            }
            if burst == 1 { #expect(moves.allSatisfy { $0 == 0 }) }
            now += 250_000_000
        }
        // The server's times map 400 µs earlier on ours, less the filter's smoothing of one burst.
        let moved = try #require(moves.last)
        #expect(moved < -50_000 && moved >= -400_000, "moved \(moved) ns")
        #expect(moves.dropLast().allSatisfy { $0 == 0 })
    }

    @Test("an answer to no request is ignored; server stamps past the arithmetic close the connection")
    func clockRejects() throws {
        let clock = SendspinClock()
        let now: UInt64 = 5_000_000_000
        let unasked = try clock.record(reply(1000, offset: 0, now: now), receivedAt: now)
        #expect(!unasked.sendNext && !unasked.synchronized)
        #expect(clock.beginBurst(now: now) == .send)
        // Stamped before the burst began: not one of its requests.
        let stale = try clock.record(reply(1000, offset: 0, now: now), receivedAt: now + 1000)
        #expect(!stale.sendNext && !stale.synchronized)
        let huge = SendspinTimeReply(clientTransmitted: 5_000_000, serverReceived: .max, serverTransmitted: .max)
        #expect(throws: SendspinError.self) { _ = try clock.record(huge, receivedAt: now + 2000) }
        #expect(clock.beginBurst(now: now + SendspinClock.answerTimeoutNanoseconds + 1) == .timedOut)
    }

    /// A sender and a receiver keyed alike, as after a handshake.
    private func pair() -> (NoiseCipherState, SendspinReceiver) {
        let key = [UInt8](repeating: 9, count: 32)
        return (NoiseCipherState(suite: .chaChaPoly, key: key), SendspinReceiver(cipher: NoiseCipherState(suite: .chaChaPoly, key: key)))
    }

    @Test("fragments reassemble; a broken sequence, a bad ciphertext or an oversized message throws")
    func fragments() throws {
        var (sender, receiver) = pair()
        let whole = try receiver.receive(sender.encrypt(ad: [], [0] + Array("{}".utf8))[...])
        #expect(whole == SendspinReceiver.Message(type: 0, body: Array("{}".utf8)[...]))
        #expect(try receiver.receive(sender.encrypt(ad: [], [1, 0x02, 4, 1, 2])[...]) == nil)
        #expect(try receiver.receive(sender.encrypt(ad: [], [1, 0x00, 3])[...]) == nil)
        let joined = try receiver.receive(sender.encrypt(ad: [], [1, 0x01, 4, 5])[...])
        #expect(joined == SendspinReceiver.Message(type: 4, body: [1, 2, 3, 4, 5][...]))

        let broken: [[UInt8]] = [
            [1, 0x01, 7],  // a continuation with none started
            [1, 0x04, 0, 1],  // a reserved flag
            [1, 0x02, 1],  // a fragment of fragments
            [],  // an empty message
        ]
        for plaintext in broken {
            var (sender, receiver) = pair()
            #expect(throws: SendspinError.self) { _ = try receiver.receive(try sender.encrypt(ad: [], plaintext)[...]) }
        }
        var (first, interleaved) = pair()
        _ = try interleaved.receive(first.encrypt(ad: [], [1, 0x02, 4, 1])[...])
        #expect(throws: SendspinError.self) { _ = try interleaved.receive(try first.encrypt(ad: [], [4, 0])[...]) }

        var (_, stranger) = pair()
        #expect(throws: SendspinError.self) { _ = try stranger.receive([UInt8](repeating: 1, count: 40)[...]) }

        var (big, bounded) = pair()
        let piece = [UInt8](repeating: 0, count: 60_000)
        _ = try bounded.receive(big.encrypt(ad: [], [1, 0x02, 4] + piece)[...])
        let error = #expect(throws: SendspinError.self) {
            for _ in 0..<(SendspinReceiver.maximumMessageBytes / piece.count + 1) {
                _ = try bounded.receive(try big.encrypt(ad: [], [1, 0x00] + piece)[...])
            }
        }
        #expect(error?.code == .messageTooLarge)
    }

    @Test("server messages decode by type; unknown ones are ignored, broken ones throw")
    func messages() throws {
        func decode(_ text: String) throws -> SendspinMessage { try SendspinMessage.decode(Array(text.utf8)[...]) }
        #expect(try decode(#"{"type":"server/hello","payload":{"name":"Kitchen","languages":["en"]}}"#) == .serverHello(name: "Kitchen", connectionReason: nil))
        #expect(
            try decode(#"{"type":"server/activate","payload":{"activities":["playback"],"active_roles":["player@v1"]}}"#)
                == .serverActivate(SendspinActivation(activities: ["playback"], activeRoles: ["player@v1"])))
        #expect(
            try decode(#"{"type":"stream/start","payload":{"server_transmitted":1,"player":{"codec":"pcm","sample_rate":48000,"channels":2,"bit_depth":24}}}"#)
                == .streamStart(SendspinStreamFormat(codec: "pcm", sampleRate: 48000, channels: 2, bitDepth: 24, codecHeader: nil)))
        #expect(try decode(#"{"type":"stream/clear","payload":{"server_transmitted":1}}"#) == .streamClear(roles: nil))
        #expect(try decode(#"{"type":"stream/end","payload":{"roles":["player"]}}"#) == .streamEnd(roles: ["player"]))
        #expect(
            try decode(#"{"type":"server/command","payload":{"player":{"command":"volume","volume":40}}}"#)
                == .serverCommand(SendspinPlayerCommand(command: "volume", volume: 40)))
        #expect(
            try decode(#"{"type":"server/state","payload":{"metadata":{"timestamp":5,"title":"T","progress":{"track_progress":1,"track_duration":2,"playback_speed":1000}}}}"#)
                == .serverState(
                    SendspinServerState(
                        metadata: .init(
                            timestamp: 5, title: "T",
                            progress: .init(trackProgress: 1, trackDuration: 2, playbackSpeed: 1000)))))
        #expect(
            try decode(#"{"type":"server/state","payload":{"controller":{"supported_commands":["next"],"volume":7,"muted":false,"repeat":"off","shuffle":false}}}"#)
                == .serverState(
                    SendspinServerState(
                        controller: .init(supportedCommands: ["next"], volume: 7, muted: false, repeatMode: "off", shuffle: false))))
        #expect(try decode(#"{"type":"server/state","payload":{"color":{}}}"#) == .serverState(SendspinServerState()))
        #expect(try decode(#"{"type":"group/unknown","payload":{}}"#) == .ignored(type: "group/unknown"))
        let broken = [
            #"{"type":"server/time","payload":{"client_transmitted":1}}"#,
            #"{"type":"server/time","payload":{"client_transmitted":1,"server_received":1e30,"server_transmitted":2}}"#,
            #"{"payload":{}}"#, "not json", #"{"type":"stream/start","payload":{"player":{"codec":"pcm"}}}"#,
            #"{"type":"server/state","payload":{"controller":{"volume":7}}}"#,
        ]
        for text in broken {
            #expect(throws: SendspinError.self, "\(text)") { _ = try decode(text) }
        }
        #expect(throws: SendspinError.self) { _ = try SendspinMessage.decode([UInt8](repeating: 32, count: 70_000)[...]) }
    }

    @Test("the player's messages carry the fields the reference server reads")
    func outbound() throws {
        let hello = SendspinOutbound.clientHello(
            name: "box", version: "1.0", formats: SendspinFormat.supported(codecs: [.pcm, .opus]), bufferCapacity: 1000)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(hello.utf8)) as? [String: Any])
        #expect(object["type"] as? String == "client/hello")
        let payload = try #require(object["payload"] as? [String: Any])
        #expect(payload["supported_roles"] as? [String] == ["player@v1", "metadata@v1", "controller@v1"])
        #expect((payload["unpaired_access"] as? [String: Bool])?["enabled"] == true)
        let support = try #require(payload["player@v1_support"] as? [String: Any])
        let formats = try #require(support["supported_formats"] as? [[String: Any]])
        #expect(formats.first?["codec"] as? String == "pcm" && formats.first?["bit_depth"] as? Int == 16)
        #expect(formats.last?["codec"] as? String == "opus")
        #expect(SendspinOutbound.clientTime(42) == #"{"payload":{"client_transmitted":42},"type":"client/time"}"#)
        let state = SendspinOutbound.clientState(
            available: false, player: SendspinPlayerState(volume: 40, muted: true, outputDelayMs: 5, requiredLeadTimeMs: 250, minBufferMs: 250))
        #expect(state.contains(#""available":false"#) && state.contains(#""supported_commands":["volume","mute","set_output_delay"]"#))
        #expect(
            SendspinOutbound.clientCommand(SendspinCommand(command: "volume", volume: 40))
                == #"{"payload":{"controller":{"command":"volume","volume":40}},"type":"client/command"}"#)
    }

    @Test("controller commands: known ones parse, each takes exactly its own value")
    func commands() throws {
        func parse(_ text: String) throws(SendspinCommandError) -> SendspinCommand { try SendspinCommand.parse(Data(text.utf8)) }
        #expect(try parse(#"{"command":"next"}"#) == SendspinCommand(command: "next"))
        #expect(try parse(#"{"command":"seek","position_ms":5}"#) == SendspinCommand(command: "seek", positionMs: 5))
        for text in ["not json", #"{"command":"bogus"}"#, #"{"volume":4}"#, #"{"command":7}"#] {
            let error = #expect(throws: SendspinCommandError.self, "\(text)") { _ = try parse(text) }
            #expect(error?.code == .badBody)
        }
        let valid = [
            SendspinCommand(command: "next"), SendspinCommand(command: "volume", volume: 0), SendspinCommand(command: "mute", mute: true),
            SendspinCommand(command: "seek", positionMs: 0), SendspinCommand(command: "seek_relative", offsetMs: -5000),
        ]
        for command in valid { #expect(throws: Never.self) { try command.validate() } }
        let invalid = [
            SendspinCommand(command: "volume"), SendspinCommand(command: "volume", volume: 101), SendspinCommand(command: "next", volume: 3),
            SendspinCommand(command: "mute"), SendspinCommand(command: "play", mute: false), SendspinCommand(command: "seek", positionMs: -1),
            SendspinCommand(command: "next", positionMs: 1), SendspinCommand(command: "seek_relative"), SendspinCommand(command: "stop", offsetMs: 1),
        ]
        for command in invalid {
            let error = #expect(throws: SendspinCommandError.self, "\(command)") { try command.validate() }
            #expect(error?.code == .badBody)
        }
    }

    @Test("what is playing: progress moves on at the server's speed from its timestamp, within the track")
    func metadataProgress() {
        let progress = SendspinServerState.Progress(trackProgress: 1000, trackDuration: 5000, playbackSpeed: 1000)
        let metadata = SendspinServerState.Metadata(timestamp: 1_000_000, title: "T", progress: progress)
        #expect(SendspinMetadataStatus(metadata, serverNow: 3_000_000).progressMs == 3000)
        #expect(SendspinMetadataStatus(metadata, serverNow: 60_000_000).progressMs == 5000)
        #expect(SendspinMetadataStatus(metadata, serverNow: nil).progressMs == 1000)
        var paused = metadata
        paused.progress?.playbackSpeed = 0
        #expect(SendspinMetadataStatus(paused, serverNow: 3_000_000).progressMs == 1000)
        #expect(SendspinMetadataStatus(metadata, serverNow: 3_000_000).title == "T")
        var long = metadata
        long.title = String(repeating: "x", count: 10_000)
        #expect(SendspinMetadataStatus(long, serverNow: nil).title?.count == SendspinMetadataStatus.maximumText)
        #expect(SendspinMetadataStatus(SendspinServerState.Metadata(timestamp: 1), serverNow: nil).isEmpty)
        #expect(!SendspinMetadataStatus(metadata, serverNow: nil).isEmpty)
    }

    @Test("the handshake's cleartext messages parse, and the Sentinel PSK has its published id")
    func cleartext() throws {
        let key = Curve25519.KeyAgreement.PrivateKey()
        let id = Base64URL.encode(Array(key.publicKey.rawRepresentation))
        let parsed = try SendspinConnection.parseServerInit(#"{"type":"server/init","payload":{"server_id":"\#(id)","version":1}}"#)
        #expect(parsed.key == Array(key.publicKey.rawRepresentation))
        let refused = #expect(throws: SendspinError.self) {
            _ = try SendspinConnection.parseServerInit(#"{"type":"server/error","payload":{"reason":"malformed"}}"#)
        }
        #expect(refused?.code == .refused)
        let suite = #expect(throws: SendspinError.self) {
            _ = try SendspinConnection.parseServerInit(#"{"type":"server/error","payload":{"reason":"unsupported_suite"}}"#)
        }
        #expect(suite?.code == .unsupportedSuite)
        for bad in [
            #"{"type":"server/init","payload":{"server_id":"\#(id)","version":2}}"#,
            #"{"type":"server/init","payload":{"server_id":"abc","version":1}}"#, "[]",
        ] {
            #expect(throws: SendspinError.self) { _ = try SendspinConnection.parseServerInit(bad) }
        }
        #expect(try SendspinConnection.parseHandshake(#"{"type":"noise/handshake","payload":{"data":"AAEC"}}"#) == [0, 1, 2])
        let reference = try SendspinConnection.parsePSKReference(Array(#"{"psk_id":"x","psk_category":"sn"}"#.utf8))
        #expect(reference.id == "x" && reference.category == "sn")
    }

    @Test("settings: URL, output delay, stream name and codecs are checked")
    func configuration() {
        var settings = SendspinConfiguration()
        #expect(settings.problem() == nil)
        settings.url = "ws://127.0.0.1:8927/sendspin"
        #expect(settings.problem() == nil)
        for url in ["http://host/sendspin", "ws://", "host:8927", "ws://host:70000/x", "wss://host/sendspin"] {
            settings.url = url
            #expect(settings.problem() != nil, "\(url)")
        }
        settings.url = "ws://[::1]:8927/sendspin"
        #expect(settings.problem() == nil)
        settings.outputDelayMilliseconds = 5001
        #expect(settings.problem() != nil)
        settings.outputDelayMilliseconds = 0
        settings.stream = "bad name"
        #expect(settings.problem() != nil)
        settings.stream = "sendspin"
        settings.codecs = [.opus]
        #expect(settings.problem() != nil)
        settings.codecs = [.flac, .pcm]
        settings.listen = SendspinConfiguration.ListenAddress(host: nil, port: 8928)
        #expect(settings.problem()?.contains("give one") == true)
        settings.url = nil
        #expect(settings.problem() == nil)
        settings.listen?.port = 0
        #expect(settings.problem() != nil)
        #expect(SendspinConfiguration.ListenAddress("8928") == .init(host: nil, port: 8928))
        #expect(SendspinConfiguration.ListenAddress("0.0.0.0:8928") == .init(host: "0.0.0.0", port: 8928))
        #expect(SendspinConfiguration.ListenAddress("[::]:8928") == .init(host: "::", port: 8928))
        #expect(SendspinConfiguration.ListenAddress("[::]:8928")?.description == "[::]:8928")
        for text in ["", "host:", ":8928", "8928x", "ws://host:8928"] {
            #expect(SendspinConfiguration.ListenAddress(text) == nil, "\(text)")
        }
        #expect(SendspinConfiguration.parseCodecs("pcm, FLAC,opus") == [.pcm, .flac, .opus])
        #expect(SendspinConfiguration.parseCodecs("pcm,mp3") == nil)
    }

    @Test("volume follows (v/100)^1.5: 100 to 40 is -11.9 dB")
    func volumeCurve() {
        #expect(SendspinVolume.gain(volume: 100) == 1)
        #expect(SendspinVolume.gain(volume: 0) == 0)
        let step = 20 * log10(Double(SendspinVolume.gain(volume: 40)))
        #expect(abs(step - -11.94) < 0.01)
        #expect(SendspinVolume.gain(volume: 200) == 1)
    }

    @Test("the static key is made once, owner-only, and read back the same; a damaged one is refused")
    func identity() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sendspin-key-\(UUID().uuidString)/data").path
        defer { try? FileManager.default.removeItem(atPath: (folder as NSString).deletingLastPathComponent) }
        let first = try SendspinIdentity.loadOrCreate(directory: folder)
        let second = try SendspinIdentity.loadOrCreate(directory: folder)
        #expect(first.clientID == second.clientID)
        #expect(first.clientID.count == 43)
        let path = folder + "/" + SendspinIdentity.fileName
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        try "not a key\n".write(toFile: path, atomically: false, encoding: .utf8)
        #expect(throws: SendspinError.self) { _ = try SendspinIdentity.loadOrCreate(directory: folder) }
    }

    @Test("stream/start formats: offered codecs at 16 or 24 bits, FLAC with its header, Opus")
    func decoders() throws {
        func format(_ codec: String, bits: Int = 16, header: String? = nil) -> SendspinStreamFormat {
            SendspinStreamFormat(codec: codec, sampleRate: 48000, channels: 2, bitDepth: bits, codecHeader: header)
        }
        let all = SendspinCodec.allCases
        let pcm24 = try SendspinSession.decoder(for: format("pcm", bits: 24), codecs: all)
        // Two frames of 24-bit stereo: full scale positive, then half scale negative.
        let chunk: [UInt8] = [0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0x7F, 0x00, 0x00, 0xC0, 0x00, 0x00, 0xC0]
        let samples = try chunk.withUnsafeBytes { raw in try pcm24.decode(bytes: raw) { Array($0) } }
        #expect(samples.count == 4)
        #expect(samples[0] > 32000 && abs(Int(samples[2]) + 16384) < 2)
        #expect(throws: SendspinError.self) { _ = try SendspinSession.decoder(for: format("pcm", bits: 20), codecs: all) }
        #expect(throws: SendspinError.self) { _ = try SendspinSession.decoder(for: format("flac"), codecs: all) }
        #expect(throws: SendspinError.self) { _ = try SendspinSession.decoder(for: format("mp3"), codecs: all) }
        #expect(throws: SendspinError.self) { _ = try SendspinSession.decoder(for: format("opus"), codecs: [.pcm]) }
        let opus = try SendspinSession.decoder(for: format("opus"), codecs: all)
        #expect(opus.format.rate == 48000 && opus.format.channels == 2)
        // A partial frame of 24-bit stereo is a header that lies about its frames.
        #expect(throws: SnapcastError.self) { _ = try [UInt8](repeating: 0, count: 5).withUnsafeBytes { raw in try pcm24.decode(bytes: raw) { $0.count } } }
    }
}
