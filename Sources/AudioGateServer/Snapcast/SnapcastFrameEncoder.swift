import AudioGateCore
import NIOCore

/// Writes Hello and Time messages; each is stamped with our clock as it is written.
public struct SnapcastFrameEncoder: MessageToByteEncoder {
    public typealias OutboundIn = SnapcastRequest

    public init() {}

    public func encode(data: SnapcastRequest, out: inout ByteBuffer) {
        let sent = SnapcastTimestamp(nanoseconds: MonotonicClock.nowNanoseconds())
        switch data {
        case .hello(let id, let json):
            SnapcastHeader(type: SnapcastHeader.MessageType.hello.rawValue, id: id, sent: sent, size: UInt32(4 + json.count))
                .write(to: &out)
            out.writeInteger(UInt32(json.count), endianness: .little)
            out.writeBytes(json)
        case .time(let id):
            SnapcastHeader(type: SnapcastHeader.MessageType.time.rawValue, id: id, sent: sent, size: 8).write(to: &out)
            out.writeSnapcastTimestamp(SnapcastTimestamp(seconds: 0, microseconds: 0))
        }
    }
}
