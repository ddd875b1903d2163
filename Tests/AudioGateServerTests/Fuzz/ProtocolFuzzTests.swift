import AudioGateCore
import AudioGateTestSupport
import Foundation
import NIOCore
import Testing

@testable import AudioGateServer

/// Seeded mutations of real protocol input through every decoder a peer or client feeds: each case
/// is decoded or refused with a typed error, never a trap, a hang or an answer that breaks a bound.
///
/// `AUDIOGATE_FUZZ_CASES` sets the cases per decoder (default 3000; `make fuzz` runs 100000).
@Suite("protocol fuzzing")
struct ProtocolFuzzTests {
    static let defaultCases = 3000

    /// Feeds `bytes` to `body` in random slices of 1 byte to 4 KiB, as a socket delivers them.
    static func slices(of bytes: [UInt8], generator: inout SeededGenerator, _ body: (inout ByteBuffer) throws -> Void) rethrows {
        var buffer = ByteBuffer()
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + Int.random(in: 1...4096, using: &generator))
            buffer.writeBytes(bytes[offset..<end])
            offset = end
            try body(&buffer)
        }
    }

    /// One damaged stream of messages: the whole stream mutated, or one message of it (so the
    /// others still lead the decoder deep), or messages dropped, repeated and reordered.
    static func damaged(_ messages: [[UInt8]], other: [UInt8], tokens: [[UInt8]] = [], generator: inout SeededGenerator) -> [UInt8] {
        var messages = messages
        switch Int.random(in: 0..<3, using: &generator) {
        case 0:
            return generator.mutate(messages.flatMap { $0 }, other: other, tokens: tokens)
        case 1:
            let index = Int.random(in: 0..<messages.count, using: &generator)
            messages[index] = generator.mutate(messages[index], other: other, tokens: tokens, edits: 4, headBytes: 64)
        default:
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let index = Int.random(in: 0..<messages.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: messages.remove(at: index)
                case 1: messages.insert(messages[index], at: Int.random(in: 0...messages.count, using: &generator))
                default: messages.swapAt(index, Int.random(in: 0..<messages.count, using: &generator))
                }
                if messages.isEmpty { messages = [other] }
            }
        }
        return messages.flatMap { $0 }
    }

    // MARK: - Snapcast

    /// What the client does with a server's bytes, minus the card: frame, parse, open the codec,
    /// decode chunks, run the clock and the presentation arithmetic.
    static func snapcastCase(_ stream: [UInt8], generator: inout SeededGenerator) -> String {
        var framer = SnapcastFrameDecoder()
        var codec: SnapcastDecoder?
        var settings: SnapcastServerSettings?
        let clock = SnapcastClock()
        var played = 0
        var oversized = false
        do throws(SnapcastError) {
            var thrown: SnapcastError?
            slices(of: stream, generator: &generator) { buffer in
                guard thrown == nil else { return }
                do throws(SnapcastError) {
                    while let message = try framer.next(from: &buffer) {
                        switch message {
                        case .serverSettings(let value):
                            settings = value
                        case .codecHeader(let header):
                            codec = try SnapcastDecoder(header: header)
                        case .time(let reply):
                            clock.add(diffMicroseconds: reply.diffMicroseconds, now: reply.receivedNanoseconds)
                        case .wireChunk(let timestamp, let payload):
                            if let settings {
                                _ = try SnapcastSession.presentationNanoseconds(
                                    of: timestamp, diffMicroseconds: clock.diffMicroseconds, settings: settings, latencyMilliseconds: 0)
                            }
                            if let codec {
                                let samples = try codec.decode(payload) { $0.count }
                                if samples > SnapcastDecoder.maximumChunkFrames * codec.format.channels { oversized = true }
                                if samples > 0 { played += 1 }
                            }
                        case .ignored:
                            break
                        }
                    }
                } catch {
                    thrown = error
                }
            }
            if let thrown { throw thrown }
        } catch {
            return error.code.rawValue
        }
        if oversized { return "oversized" }
        if let settings, !(SnapcastServerSettings.bufferMsRange.contains(settings.bufferMs)
            && SnapcastServerSettings.latencyRange.contains(settings.latency)
            && SnapcastServerSettings.volumeRange.contains(settings.volume))
        {
            return "settings_out_of_range"
        }
        return played > 0 ? "played" : "nothing_played"
    }

    @Test("mutated snapserver connections (pcm, flac, ogg, opus) play or close with a typed error")
    func snapcast() throws {
        let connections = try ProtocolFuzzSeeds.snapcastConnections()
        for connection in connections {
            var generator = SeededGenerator(seed: 1)
            #expect(Self.snapcastCase(connection.flatMap { $0 }, generator: &generator) == "played", "an unmutated connection must play")
        }
        let tokens = [#""bufferMs":"#, #""latency":"#, #""volume":"#, "9223372036854775807", "-9223372036854775808"].map { Array($0.utf8) }
        var generator = SeededGenerator(seed: 0x534E_4150)
        var run = FuzzRun(defaultCases: Self.defaultCases)
        let outcomes = run.run("snapcast") { index in
            let connection = connections[index % connections.count]
            let other = connections[(index + 1) % connections.count].randomElement(using: &generator)!
            let stream = Self.damaged(connection, other: other, tokens: tokens, generator: &generator)
            return Self.snapcastCase(stream, generator: &generator)
        }
        #expect(outcomes["oversized"] == nil && outcomes["settings_out_of_range"] == nil)
        // The mix shows the cases reach the codecs and the clock, not just the header check.
        #expect(outcomes["played", default: 0] > run.cases / 10)
        #expect(outcomes.filter { $0.key != "played" && $0.key != "nothing_played" }.values.reduce(0, +) > run.cases / 10)
    }

    // MARK: - Wyoming

    /// What a snd connection does with a peer's bytes, minus the card: frame, then read each audio
    /// event's format as the session does.
    static func wyomingCase(_ stream: [UInt8], generator: inout SeededGenerator) -> String {
        var framer = WyomingFrameDecoder()
        var started: AudioFormat?
        var chunks = 0
        var thrown: WyomingError?
        slices(of: stream, generator: &generator) { buffer in
            guard thrown == nil else { return }
            do throws(WyomingError) {
                while let event = try framer.next(from: &buffer) {
                    switch event.type {
                    case WyomingEvent.Kind.audioStart:
                        started = try WyomingSndSession.format(of: event, fallback: nil)
                    case WyomingEvent.Kind.audioChunk:
                        let format = try WyomingSndSession.format(of: event, fallback: started)
                        if let payload = event.payload, payload.readableBytes >= format.bytesPerFrame { chunks += 1 }
                    default:
                        break
                    }
                }
            } catch {
                thrown = error
            }
        }
        if let thrown { return thrown.code.rawValue }
        return chunks > 0 ? "played" : "nothing_played"
    }

    @Test("mutated Wyoming events are framed and read or refused with a typed error")
    func wyoming() throws {
        let events = try ProtocolFuzzSeeds.wyomingEvents()
        var check = SeededGenerator(seed: 1)
        #expect(Self.wyomingCase(events.flatMap { $0 }, generator: &check) == "played", "the unmutated events must play")
        let tokens = [#""data_length":"#, #""payload_length":"#, #""rate":"#, #""width":"#, #""channels":"#, "\n", "{", "}", "["]
            .map { Array($0.utf8) }
        var generator = SeededGenerator(seed: 0x5759_4F4D)
        var run = FuzzRun(defaultCases: Self.defaultCases)
        let outcomes = run.run("wyoming") { _ in
            let stream = Self.damaged(events, other: events.randomElement(using: &generator)!, tokens: tokens, generator: &generator)
            return Self.wyomingCase(stream, generator: &generator)
        }
        #expect(outcomes["played", default: 0] > run.cases / 10)
        #expect(outcomes.filter { $0.key != "played" && $0.key != "nothing_played" }.values.reduce(0, +) > run.cases / 10)
    }

    // MARK: - WAV

    @Test("mutated WAV files parse to a consistent header or a typed error")
    func wav() throws {
        let files = try ProtocolFuzzSeeds.wavFiles()
        for file in files { #expect(throws: Never.self) { _ = try WAVHeader.parse(file) } }
        let tokens = ["RIFF", "WAVE", "fmt ", "data", "LIST"].map { Array($0.utf8) }
        var generator = SeededGenerator(seed: 0x5741_5645)
        var run = FuzzRun(defaultCases: Self.defaultCases * 10)
        let outcomes = run.run("wav header") { index in
            let input = generator.mutate(files[index % files.count], other: files[(index + 1) % files.count], tokens: tokens, headBytes: 128)
            do throws(WAVError) {
                let header = try WAVHeader.parse(input)
                let format = header.format
                guard header.dataOffset <= input.count, header.dataOffset <= WAVHeader.maximumHeaderSearch,
                    [1, 2].contains(format.channels), (8000...192_000).contains(format.rate),
                    header.dataByteCount.map({ $0 > 0 && $0 < Int(WAVHeader.unknownSize) }) ?? true
                else { return "inconsistent" }
                return "parsed"
            } catch {
                return error.code.rawValue
            }
        }
        #expect(outcomes["inconsistent"] == nil)
        // The mix shows the cases reach deep into the parser, not just the magic check.
        #expect(outcomes["parsed", default: 0] > run.cases / 10)
        #expect(outcomes["truncated", default: 0] > run.cases / 100)
        #expect(outcomes["malformed", default: 0] > run.cases / 100)
    }

    // MARK: - Playback WebSocket

    @Test("mutated playback client messages decode within their bounds or are refused")
    func playbackMessages() throws {
        let messages = try ProtocolFuzzSeeds.playbackMessages()
        for message in messages { #expect(throws: Never.self) { _ = try PlaybackClientMessage.decode(String(decoding: message, as: UTF8.self)) } }
        let tokens = [#""type":"#, #""name":"#, #""data":"#, #""audio""#, #""mark""#, #""clear""#, #""id":"#, #""pause""#, "{", "[", "\\u0000", "\\ud800"]
            .map { Array($0.utf8) }
        var generator = SeededGenerator(seed: 0x4A53_4F4E)
        var run = FuzzRun(defaultCases: Self.defaultCases * 10)
        let outcomes = run.run("playback message") { index in
            let input = generator.mutate(
                messages[index % messages.count], other: messages[(index + 1) % messages.count], tokens: tokens, edits: 2)
            do throws(ProtocolError) {
                switch try PlaybackClientMessage.decode(String(decoding: input, as: UTF8.self)) {
                case .mark(let name): return name.utf8.count <= PlaybackClientMessage.maximumNameBytes ? "mark" : "inconsistent"
                case .audio: return "audio"
                case .clear(let id): return (id?.utf8.count ?? 0) <= PlaybackClientMessage.maximumNameBytes ? "clear" : "inconsistent"
                case .pause: return "pause"
                case .resume: return "resume"
                }
            } catch {
                return error.code.rawValue
            }
        }
        #expect(outcomes["inconsistent"] == nil)
        #expect(outcomes["mark", default: 0] + outcomes["audio", default: 0] + outcomes["clear", default: 0] > run.cases / 50)
        #expect(outcomes["invalid_json", default: 0] > run.cases / 20)
    }
}
