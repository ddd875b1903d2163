import AudioGateCore
import AudioGateTestSupport
import Foundation
import Testing

@Suite("Protocol messages")
struct ProtocolMessageTests {
    func object(_ json: String) throws -> [String: Any] {
        let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8))
        return try #require(parsed as? [String: Any])
    }

    func keys(_ json: String) throws -> Set<String> { Set(try object(json).keys) }

    @Test func serverMessageShapes() throws {
        #expect(try keys(StartMessage(rate: 16000, channels: 1, format: .s16le, chunkMs: 20).json())
                == ["type", "rate", "channels", "format", "chunk_ms"])
        #expect(try keys(AudioMessage(seq: 0, timestampMs: 1.5, data: "AAA=").json()) == ["type", "seq", "timestamp_ms", "data"])
        #expect(try keys(LevelMessage(rmsDBFS: -20, peakDBFS: -6).json()) == ["type", "rms_dbfs", "peak_dbfs"])
        #expect(try keys(OverrunMessage(droppedMs: 40).json()) == ["type", "dropped_ms"])
        #expect(try keys(DeviceMessage(state: .lost).json()) == ["type", "state"])
        #expect(try keys(MarkMessage(name: "a").json()) == ["type", "name"])
        #expect(try keys(ClearedMessage(playedMs: 1, flushedMs: 2).json()) == ["type", "played_ms", "flushed_ms"])
        #expect(try keys(ClearedMessage(playedMs: 1, flushedMs: 2, id: "c").json()) == ["type", "played_ms", "flushed_ms", "id"])
        #expect(try keys(DrainedMessage().json()) == ["type"])
        #expect(try keys(ErrorMessage(code: "x", message: "y").json()) == ["type", "code", "message"])
    }

    @Test func serverMessageValues() throws {
        let start = try object(StartMessage(rate: 24000, channels: 2, format: .f32le, chunkMs: 10).json())
        #expect(start["type"] as? String == "start" && start["rate"] as? Int == 24000)
        #expect(start["format"] as? String == "f32le" && start["chunk_ms"] as? Int == 10 && start["channels"] as? Int == 2)

        let level = try object(LevelMessage(rmsDBFS: -23.456, peakDBFS: -.infinity).json())
        #expect(level["rms_dbfs"] as? Double == -23.46 && level["peak_dbfs"] as? Double == -120)

        let cleared = try object(ClearedMessage(playedMs: 1200, flushedMs: 340).json())
        #expect(cleared["played_ms"] as? Int == 1200 && cleared["flushed_ms"] as? Int == 340)
        #expect(try object(DeviceMessage(state: .restored).json())["state"] as? String == "restored")
        #expect(try object(OverrunMessage(droppedMs: 60).json())["dropped_ms"] as? Int == 60)
        #expect(try object(DrainedMessage().json())["type"] as? String == "drained")
    }

    @Test func stringsAreEscaped() throws {
        let tricky = "quote\" back\\ nl\n tab\t ctl\u{1} snow☃ ls\u{2028}"
        #expect(try object(MarkMessage(name: tricky).json())["name"] as? String == tricky)
        #expect(try object(ClearedMessage(playedMs: 0, flushedMs: 0, id: tricky).json())["id"] as? String == tricky)
        let error = try object(ErrorMessage(code: "invalid_json", message: tricky).json())
        #expect(error["message"] as? String == tricky && error["code"] as? String == "invalid_json")
    }

    @Test func audioMessageCarriesBase64PCM() throws {
        let pcm: [UInt8] = Array(0...255) + [1, 2]
        let direct = pcm.withUnsafeBytes { AudioMessage.json(seq: 7, timestampMs: 12345.6789, pcm: $0) }
        let viaStruct = pcm.withUnsafeBytes { AudioMessage(seq: 7, timestampMs: 12345.6789, pcm: $0) }.json()
        #expect(direct == viaStruct)
        let parsed = try object(direct)
        #expect(parsed["type"] as? String == "audio" && parsed["seq"] as? Int == 7)
        #expect(parsed["timestamp_ms"] as? Double == 12345.679)
        let data = try #require(parsed["data"] as? String)
        #expect(Data(base64Encoded: data).map(Array.init) == pcm)
        #expect(data == Data(pcm).base64EncodedString())
        let empty = [UInt8]().withUnsafeBytes { AudioMessage.json(seq: 0, timestampMs: 0, pcm: $0) }
        #expect(empty == #"{"type":"audio","seq":0,"timestamp_ms":0,"data":""}"#)
    }

    @Test func codableUsesSnakeCaseAndChecksType() throws {
        let message = ClearedMessage(playedMs: 5, flushedMs: 6)
        let encoded = String(decoding: try JSONEncoder().encode(message), as: UTF8.self)
        #expect(try keys(encoded) == ["type", "played_ms", "flushed_ms"])
        #expect(try JSONDecoder().decode(ClearedMessage.self, from: Data(message.json().utf8)) == message)
        // Messages that are their type alone code through `BareMessage`, not an empty synthesized object.
        #expect(try keys(String(decoding: JSONEncoder().encode(StartedMessage()), as: UTF8.self)) == ["type"])
        #expect(try JSONDecoder().decode(StartedMessage.self, from: Data(StartedMessage().json().utf8)) == StartedMessage())
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(StartedMessage.self, from: Data(DrainedMessage().json().utf8))
        }
        let withID = ClearedMessage(playedMs: 5, flushedMs: 6, id: "own-1")
        #expect(try JSONDecoder().decode(ClearedMessage.self, from: JSONEncoder().encode(withID)) == withID)
        let start = StartMessage(rate: 8000, channels: 1, format: .s16le, chunkMs: 200)
        #expect(try JSONDecoder().decode(StartMessage.self, from: Data(start.json().utf8)) == start)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(DrainedMessage.self, from: Data(#"{"type":"mark","name":"x"}"#.utf8))
        }
    }

    @Test func base64MatchesFoundation() {
        var generator = SeededGenerator(seed: 64)
        for length in 0..<70 {
            let bytes = generator.bytes(length)
            let encoded = Base64.encode(bytes)
            #expect(encoded == Data(bytes).base64EncodedString())
            #expect(Base64.decode(encoded) == bytes)
            #expect(Base64.decode(String(encoded.prefix(while: { $0 != "=" }))) == bytes)  // unpadded
        }
        #expect(Base64.decode("A") == nil)
        #expect(Base64.decode("AA=A") == nil)
        #expect(Base64.decode("AA A") == nil)
        #expect(Base64.decode("AA-_") == nil)
        #expect(Base64.decode("") == [])
    }

    @Test func monotonicClockAdvances() async throws {
        let start = MonotonicClock.nowNanoseconds()
        let startMs = MonotonicClock.nowMilliseconds()
        try await Task.sleep(for: .milliseconds(20))
        let elapsed = MonotonicClock.nowNanoseconds() - start
        #expect(elapsed >= 19_000_000 && elapsed < 5_000_000_000)
        #expect(MonotonicClock.nowMilliseconds() - startMs >= 19)
    }
}
