import AudioGateCore
import Foundation
import NIOCore

/// Splits a Wyoming byte stream into events: a JSON header line, then `data_length` bytes of JSON
/// data, then `payload_length` bytes of payload, exactly as the `wyoming` package frames them.
///
/// Data may also sit inline in the header (`"data": {...}`, older senders); both are merged, the
/// separate data winning, as `wyoming.event.async_read_event` does. Everything is bounded by
/// `WyomingLimits`; a violation throws and the connection is closed.
public struct WyomingFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = WyomingEvent

    /// A header read whose data and payload have not fully arrived yet.
    private struct Pending {
        var type: String
        var data: [String: WyomingValue]
        var dataLength: Int
        var payloadLength: Int
    }

    private let limits: WyomingLimits
    private var pending: Pending?
    /// Told after each decoding step whether part of an event is held (see `WyomingIdleHandler`).
    private let partial: WyomingPartialEvent?

    /// A decoder enforcing `limits`.
    public init(limits: WyomingLimits = WyomingLimits()) {
        self.init(limits: limits, partial: nil)
    }

    /// A decoder enforcing `limits` that keeps `partial` up to date.
    init(limits: WyomingLimits, partial: WyomingPartialEvent?) {
        self.limits = limits
        self.partial = partial
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let event = try next(from: &buffer)
        // ByteToMessageHandler calls again while bytes are left, so the last call leaves the true answer.
        partial?.isHeld = pending != nil || buffer.readableBytes > 0
        guard let event else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(event))
        return .continue
    }

    public mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws -> DecodingState {
        // A peer that leaves mid-event just goes: the partial event is dropped.
        try decode(context: context, buffer: &buffer)
    }

    /// The next complete event in `buffer` (consuming it), or nil when more bytes are needed.
    public mutating func next(from buffer: inout ByteBuffer) throws(WyomingError) -> WyomingEvent? {
        if pending == nil {
            guard let header = try readHeader(from: &buffer) else { return nil }
            pending = header
        }
        guard let header = pending, buffer.readableBytes >= header.dataLength + header.payloadLength else {
            return nil
        }
        var data = header.data
        if header.dataLength > 0, let bytes = buffer.readBytes(length: header.dataLength) {
            for (key, value) in try decodeObject(bytes, code: .badData) { data[key] = value }
        }
        let payload = header.payloadLength > 0 ? buffer.readSlice(length: header.payloadLength) : nil
        pending = nil
        return WyomingEvent(type: header.type, data: data, payload: payload)
    }

    private func readHeader(from buffer: inout ByteBuffer) throws(WyomingError) -> Pending? {
        let view = buffer.readableBytesView
        guard let newline = view.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes >= limits.maxHeaderBytes {
                throw WyomingError(.headerTooLong, "no end of header line within \(limits.maxHeaderBytes) bytes")
            }
            return nil
        }
        let lineLength = newline - view.startIndex
        guard lineLength < limits.maxHeaderBytes else {
            throw WyomingError(.headerTooLong, "header line of \(lineLength) bytes (limit \(limits.maxHeaderBytes))")
        }
        let line = buffer.readBytes(length: lineLength) ?? []
        buffer.moveReaderIndex(forwardBy: 1)
        let header = try decodeObject(line, code: .badHeader)
        guard case .string(let type) = header["type"], (1...128).contains(type.utf8.count) else {
            throw WyomingError(.badHeader, "the header has no event type")
        }
        var data: [String: WyomingValue] = [:]
        switch header["data"] {
        case nil, .null?: break
        case .object(let inline)?: data = inline
        default: throw WyomingError(.badHeader, "inline data of '\(type)' is not an object")
        }
        let dataLength = try length(header["data_length"], name: "data_length", limit: limits.maxDataBytes, tooLong: .dataTooLong)
        let payloadLength = try length(
            header["payload_length"], name: "payload_length", limit: limits.maxPayloadBytes, tooLong: .payloadTooLong)
        return Pending(type: type, data: data, dataLength: dataLength, payloadLength: payloadLength)
    }

    private func length(
        _ value: WyomingValue?, name: String, limit: Int, tooLong: WyomingError.Code
    ) throws(WyomingError) -> Int {
        guard let value, value != .null else { return 0 }
        guard let count = value.int, count >= 0 else {
            throw WyomingError(.badHeader, "\(name) is not a byte count")
        }
        guard count <= limit else { throw WyomingError(tooLong, "\(name) \(count) exceeds the limit of \(limit) bytes") }
        return count
    }

    /// Parses a JSON object, refusing deep nesting before the recursive decoder sees it.
    private func decodeObject(_ bytes: [UInt8], code: WyomingError.Code) throws(WyomingError) -> [String: WyomingValue] {
        guard JSONNesting.depth(of: bytes) <= limits.maxNesting else {
            throw WyomingError(code, "JSON nested deeper than \(limits.maxNesting) levels")
        }
        do {
            return try JSONDecoder().decode([String: WyomingValue].self, from: Data(bytes))
        } catch {
            throw WyomingError(code, code == .badHeader ? "the header line is not a JSON object" : "the data is not a JSON object")
        }
    }
}
