import AudioGateCore
import Testing

@Suite("Playback client messages")
struct PlaybackClientMessageTests {
    func code(_ text: String) -> ProtocolError.Code? {
        do {
            _ = try PlaybackClientMessage.decode(text)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func decodesValidMessages() throws {
        #expect(try PlaybackClientMessage.decode(#"{"type":"audio","data":"AAEC/w=="}"#) == .audio(data: [0, 1, 2, 255]))
        #expect(try PlaybackClientMessage.decode(#"{"type":"mark","name":"turn-1"}"#) == .mark(name: "turn-1"))
        #expect(try PlaybackClientMessage.decode(#" {"type" : "clear", "extra": [1, {"x": null}]} "#) == .clear(id: nil))
        #expect(try PlaybackClientMessage.decode(#"{"type":"clear","id":"barge-7"}"#) == .clear(id: "barge-7"))
        #expect(try PlaybackClientMessage.decode(#"{"type":"pause"}"#) == .pause)
        #expect(try PlaybackClientMessage.decode(#"{"type":"resume","at":1}"#) == .resume)
        #expect(try PlaybackClientMessage.decode(#"{"name":"\u00e9\ud83d\ude00","type":"mark"}"#) == .mark(name: "é😀"))
        #expect(try PlaybackClientMessage.decode(#"{"type":"audio","data":""}"#) == .audio(data: []))
        #expect(try PlaybackClientMessage.decode(#"{"type":"mark","name":"\#(String(repeating: "x", count: 256))"}"#)
                == .mark(name: String(repeating: "x", count: 256)))
    }

    @Test func rejectsWithTheRightCode() {
        #expect(code("") == .invalidJSON)
        #expect(code("{") == .invalidJSON)
        #expect(code(#"{"type":"clear" "x":1}"#) == .invalidJSON)
        #expect(code(#"{"type":'clear'}"#) == .invalidJSON)
        #expect(code("[1,2]") == .notAnObject)
        #expect(code("42") == .notAnObject)
        #expect(code("{}") == .unknownType)
        #expect(code(#"{"type":"play"}"#) == .unknownType)
        #expect(code(#"{"type":"Pause"}"#) == .unknownType)
        #expect(code(#"{"type":7}"#) == .invalidField)
        #expect(code(#"{"type":"audio"}"#) == .missingField)
        #expect(code(#"{"type":"mark"}"#) == .missingField)
        #expect(code(#"{"type":"mark","name":3}"#) == .invalidField)
        #expect(code(#"{"type":"clear","id":3}"#) == .invalidField)
        #expect(code(#"{"type":"clear","id":null}"#) == .invalidField)
        #expect(code(#"{"type":"clear","id":"\#(String(repeating: "x", count: 257))"}"#) == .nameTooLong)
        #expect(code(#"{"type":"audio","data":null}"#) == .invalidField)
        #expect(code(#"{"type":"audio","data":"***"}"#) == .invalidBase64)
        #expect(code(#"{"type":"mark","name":"\#(String(repeating: "é", count: 129))"}"#) == .nameTooLong)
    }

    @Test func deepNestingIsRejectedWithoutRecursion() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(code(deep) == .invalidJSON)
        let deepObject = #"{"type":"clear","x":"# + String(repeating: #"{"a":"#, count: 50_000) + "1" + String(repeating: "}", count: 50_001)
        #expect(code(deepObject) == .invalidJSON)
        // Brackets inside strings do not count.
        #expect(code(#"{"type":"mark","name":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"[["}"#) == nil)
    }
}
