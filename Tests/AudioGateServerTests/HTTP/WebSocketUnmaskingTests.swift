import NIOCore
import NIOWebSocket
import Testing

@testable import AudioGateServer

@Suite("websocket unmasking")
struct WebSocketUnmaskingTests {
    @Test("unmasking eight bytes at a time gives NIO's byte-at-a-time result for every length and offset")
    func matchesNIO() {
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 3, 7, 8, 9, 15, 16, 17, 640, 966, 1001] {
            for offset in 0..<4 {
                let key = WebSocketMaskingKey((0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) })!
                let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                var expected = ByteBuffer(bytes: payload)
                expected.webSocketUnmask(key, indexOffset: offset)
                var actual = payload
                actual.withUnsafeMutableBytes { WebSocketFrame.unmask($0, key: key, indexOffset: offset) }
                #expect(actual == Array(expected.readableBytesView), "length \(length), offset \(offset)")
            }
        }
    }

    @Test("a masked frame's payload comes back as sent; an unmasked one is left alone")
    func frame() {
        let key = WebSocketMaskingKey([0x12, 0x34, 0x56, 0x78])!
        let sent = ByteBuffer(bytes: Array(0..<100).map { UInt8($0) })
        var masked = sent
        masked.webSocketMask(key)
        #expect(masked != sent)
        #expect(WebSocketFrame(fin: true, opcode: .binary, maskKey: key, data: masked).unmaskedPayload == sent)
        #expect(WebSocketFrame(fin: true, opcode: .binary, data: sent).unmaskedPayload == sent)
    }
}
