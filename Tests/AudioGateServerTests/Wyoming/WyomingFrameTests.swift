import AudioGateServer
import Foundation
import NIOCore
import Testing

@Suite("Wyoming framing")
struct WyomingFrameTests {
    private func bytes(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    @Test("a header with separate data and a payload decodes whole")
    func separateData() throws {
        var decoder = WyomingFrameDecoder()
        let data = #"{"rate":16000,"width":2,"channels":1}"#
        var buffer = bytes(
            #"{"type":"audio-chunk","version":"1.10.2","data_length":\#(data.utf8.count),"payload_length":4}"# + "\n"
                + data + "abcd")
        let event = try #require(try decoder.next(from: &buffer))
        #expect(event.type == "audio-chunk")
        #expect(event.data["rate"]?.int == 16000 && event.data["width"]?.int == 2 && event.data["channels"]?.int == 1)
        #expect(event.payload.map { String(buffer: $0) } == "abcd")
        #expect(buffer.readableBytes == 0)
        #expect(try decoder.next(from: &buffer) == nil)
    }

    @Test("inline data (older senders) is merged with separate data, the separate winning")
    func inlineData() throws {
        var decoder = WyomingFrameDecoder()
        var buffer = bytes(#"{"type":"audio-start","data":{"rate":8000,"width":2},"data_length":13}"# + "\n" + #"{"rate":9000}"#)
        let event = try #require(try decoder.next(from: &buffer))
        #expect(event.data["rate"]?.int == 9000)
        #expect(event.data["width"]?.int == 2)
        #expect(event.payload == nil)
    }

    @Test("an event split at every byte boundary decodes the same")
    func splitAcrossReads() throws {
        let whole = Array(#"{"type":"describe"}"# .utf8) + [0x0A]
            + Array(#"{"type":"audio-chunk","data_length":2,"payload_length":3}"#.utf8) + [0x0A] + Array("{}xyz".utf8)
        for split in 1..<whole.count {
            var decoder = WyomingFrameDecoder()
            var buffer = ByteBuffer(bytes: whole[0..<split])
            var events: [WyomingEvent] = []
            while let event = try decoder.next(from: &buffer) { events.append(event) }
            buffer.writeBytes(whole[split...])
            while let event = try decoder.next(from: &buffer) { events.append(event) }
            #expect(events.map(\.type) == ["describe", "audio-chunk"], "split at \(split)")
            #expect(events.last?.payload.map { String(buffer: $0) } == "xyz", "split at \(split)")
        }
    }

    @Test("what the encoder writes, the decoder reads back; the header has the wyoming package's keys")
    func roundTrip() throws {
        let event = WyomingEvent(
            type: "audio-chunk", data: ["rate": 16000, "width": 2, "channels": 1, "timestamp": 64],
            payload: ByteBuffer(bytes: [1, 2, 3, 4]))
        var buffer = ByteBuffer()
        WyomingFrameEncoder.encode(event, into: &buffer)
        let line = try #require(buffer.getString(at: 0, length: buffer.readableBytesView.firstIndex(of: 0x0A)!))
        let header = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(header["type"] as? String == "audio-chunk")
        #expect(header["version"] is String)
        #expect(header["payload_length"] as? Int == 4)
        #expect((header["data_length"] as? Int ?? 0) > 0)
        #expect(header["data"] == nil)
        var decoder = WyomingFrameDecoder()
        #expect(try decoder.next(from: &buffer) == event)

        var empty = ByteBuffer()
        WyomingFrameEncoder.encode(WyomingEvent(type: "played"), into: &empty)
        #expect(String(buffer: empty) == #"{"type":"played","version":"\#(WyomingFrameEncoder.version)"}"# + "\n")
    }

    @Test("limits and garbage throw the matching error", arguments: [
        (String(repeating: "x", count: 70_000), WyomingError.Code.headerTooLong),
        ("garbage\n", .badHeader),
        ("\n", .badHeader),
        (#"{"version":"1"}"# + "\n", .badHeader),
        (#"{"type":5}"# + "\n", .badHeader),
        (#"["type"]"# + "\n", .badHeader),
        (#"{"type":"x","payload_length":100000000}"# + "\n", .payloadTooLong),
        (#"{"type":"x","payload_length":-1}"# + "\n", .badHeader),
        (#"{"type":"x","payload_length":1.5}"# + "\n", .badHeader),
        (#"{"type":"x","data_length":70000}"# + "\n", .dataTooLong),
        (#"{"type":"x","data_length":3}"# + "\nabc", .badData),
        (#"{"type":"x","data":[1]}"# + "\n", .badHeader),
    ])
    func hostile(input: String, code: WyomingError.Code) {
        var decoder = WyomingFrameDecoder()
        var buffer = ByteBuffer(string: input)
        #expect(throws: WyomingError.self) { _ = try decoder.next(from: &buffer) }
        do {
            var again = WyomingFrameDecoder()
            var buffer = ByteBuffer(string: input)
            _ = try again.next(from: &buffer)
        } catch {
            #expect(error.code == code, "\(input.prefix(60))")
        }
    }

    @Test("JSON nested 60,000 deep (within the header limit) is refused before it is parsed")
    func deepNesting() {
        var decoder = WyomingFrameDecoder()
        var buffer = ByteBuffer(string: #"{"type":"x","data":"# + String(repeating: "[", count: 60_000) + "}\n")
        #expect(throws: WyomingError(.badHeader, "JSON nested deeper than 32 levels")) { _ = try decoder.next(from: &buffer) }
    }

    @Test("a half header waits for more bytes without error")
    func halfHeader() throws {
        var decoder = WyomingFrameDecoder()
        var buffer = ByteBuffer(string: #"{"type":"descr"#)
        #expect(try decoder.next(from: &buffer) == nil)
        buffer.writeString(#"ibe"}"# + "\n")
        #expect(try decoder.next(from: &buffer)?.type == "describe")
    }
}
