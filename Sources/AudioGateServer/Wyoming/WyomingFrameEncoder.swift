import Foundation
import NIOCore

/// Writes Wyoming events as the `wyoming` package does: a header line with `type`, `version`,
/// `data_length` and `payload_length`, then the data JSON, then the payload.
public struct WyomingFrameEncoder: MessageToByteEncoder {
    public typealias OutboundIn = WyomingEvent

    /// The protocol version written in headers: the framing (separate data) of the `wyoming`
    /// package since 1.x, read by every version audiogate is tested with.
    public static let version = "1.5.4"

    /// An encoder.
    public init() {}

    public func encode(data event: WyomingEvent, out: inout ByteBuffer) throws {
        Self.encode(event, into: &out)
    }

    /// Appends the framed event to `out`.
    public static func encode(_ event: WyomingEvent, into out: inout ByteBuffer) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding these value trees cannot fail (no non-finite numbers are ever put in them).
        let data = event.data.isEmpty ? nil : try? encoder.encode(event.data)
        var header: [String: WyomingValue] = ["type": .string(event.type), "version": .string(version)]
        if let data { header["data_length"] = .number(Double(data.count)) }
        if let payload = event.payload, payload.readableBytes > 0 {
            header["payload_length"] = .number(Double(payload.readableBytes))
        }
        let line = (try? encoder.encode(header)) ?? Data()
        out.reserveCapacity(minimumWritableBytes: line.count + 1 + (data?.count ?? 0) + (event.payload?.readableBytes ?? 0))
        out.writeBytes(line)
        out.writeInteger(UInt8(ascii: "\n"))
        if let data { out.writeBytes(data) }
        if var payload = event.payload, payload.readableBytes > 0 { out.writeBuffer(&payload) }
    }
}
