import AudioGateCore
import Foundation
import NIOCore

/// Splits a snapserver's byte stream into messages: the 26-byte base header, then `size` bytes of
/// typed message. An unknown type or a size over the limit is refused as soon as the header is in,
/// before any of the payload is buffered.
public struct SnapcastFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = SnapcastMessage

    /// snapclient's limit (`msg::max_size`): far above any chunk snapserver sends.
    public static let maximumMessageBytes = 1_000_000
    /// Longest codec name accepted.
    static let maximumCodecNameBytes = 32
    /// Deepest JSON accepted in ServerSettings.
    static let maximumNesting = 8

    private var pending: SnapcastHeader?
    private var receivedNanoseconds: UInt64 = 0
    private let maximumBytes: Int

    /// A decoder refusing messages over `maximumBytes`.
    public init(maximumBytes: Int = SnapcastFrameDecoder.maximumMessageBytes) {
        self.maximumBytes = maximumBytes
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let message = try next(from: &buffer) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(message))
        return .continue
    }

    public mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws -> DecodingState {
        // A server that goes away mid-message just goes: the partial message is dropped.
        try decode(context: context, buffer: &buffer)
    }

    /// The next complete message in `buffer` (consuming it), or nil when more bytes are needed.
    public mutating func next(from buffer: inout ByteBuffer) throws(SnapcastError) -> SnapcastMessage? {
        if pending == nil {
            guard let header = SnapcastHeader.read(from: &buffer) else { return nil }
            // Time answers are stamped when their first bytes are seen, as snapclient stamps them.
            receivedNanoseconds = MonotonicClock.nowNanoseconds()
            guard let type = SnapcastHeader.MessageType(rawValue: header.type),
                ![.base, .hello].contains(type)
            else {
                throw SnapcastError(.unknownMessage, "unknown message type \(header.type) (\(header.size) bytes)")
            }
            guard Int(header.size) <= maximumBytes else {
                throw SnapcastError(
                    .messageTooLarge, "message of type \(header.type) is \(header.size) bytes (limit \(maximumBytes))")
            }
            pending = header
        }
        guard let header = pending, buffer.readableBytes >= Int(header.size),
            var body = buffer.readSlice(length: Int(header.size))
        else { return nil }
        pending = nil
        return try Self.parse(header, body: &body, receivedNanoseconds: receivedNanoseconds)
    }

    static func parse(_ header: SnapcastHeader, body: inout ByteBuffer, receivedNanoseconds: UInt64) throws(SnapcastError)
        -> SnapcastMessage
    {
        // Types were checked when the header came in.
        let type = SnapcastHeader.MessageType(rawValue: header.type) ?? .base
        switch type {
        case .codecHeader:
            guard let name = body.readSnapcastBlob(), name.readableBytes <= maximumCodecNameBytes,
                let payload = body.readSnapcastBlob()
            else { throw SnapcastError(.badCodecHeader, "the codec header's lengths run past its end") }
            return .codecHeader(
                SnapcastCodecHeader(codec: String(decoding: name.readableBytesView, as: UTF8.self), payload: Array(payload.readableBytesView)))
        case .wireChunk:
            guard let timestamp = body.readSnapcastTimestamp(), let payload = body.readSnapcastBlob() else {
                throw SnapcastError(.malformedMessage, "a wire chunk's length runs past its end")
            }
            return .wireChunk(timestamp: timestamp, payload: payload)
        case .serverSettings:
            guard let json = body.readSnapcastBlob() else {
                throw SnapcastError(.malformedMessage, "the server settings' length runs past their end")
            }
            let bytes = Array(json.readableBytesView)
            guard JSONNesting.depth(of: bytes) <= maximumNesting,
                let settings = try? JSONDecoder().decode(SnapcastServerSettings.self, from: Data(bytes))
            else { throw SnapcastError(.malformedMessage, "the server settings are not the expected JSON object") }
            try settings.check()
            return .serverSettings(settings)
        case .time:
            guard let latency = body.readSnapcastTimestamp() else {
                throw SnapcastError(.malformedMessage, "a time message shorter than 8 bytes")
            }
            return .time(
                SnapcastTimeReply(
                    refersTo: header.refersTo, latency: latency, sent: header.sent, receivedNanoseconds: receivedNanoseconds))
        case .error:
            let code = body.readInteger(endianness: .little, as: UInt32.self) ?? 0
            let text = body.readSnapcastBlob().map { String(decoding: $0.readableBytesView.prefix(200), as: UTF8.self) } ?? ""
            throw SnapcastError(.serverError, "the server sent error \(code): \(text)")
        case .streamTags, .clientInfo, .base, .hello:
            return .ignored(type: header.type)
        }
    }
}
