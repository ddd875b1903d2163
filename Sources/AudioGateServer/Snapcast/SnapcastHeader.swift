import NIOCore

/// The 26-byte base message that starts every Snapcast message (little endian).
public struct SnapcastHeader: Sendable, Equatable {
    /// Typed message ids (snapcast's `message_type`).
    public enum MessageType: UInt16, Sendable {
        case base = 0
        case codecHeader = 1
        case wireChunk = 2
        case serverSettings = 3
        case time = 4
        case hello = 5
        case streamTags = 6
        case clientInfo = 7
        case error = 8
    }

    /// Bytes of the base message.
    public static let size = 26

    public var type: UInt16
    public var id: UInt16
    public var refersTo: UInt16
    public var sent: SnapcastTimestamp
    public var received: SnapcastTimestamp
    /// Bytes of the typed message that follows.
    public var size: UInt32

    public init(
        type: UInt16, id: UInt16 = 0, refersTo: UInt16 = 0, sent: SnapcastTimestamp = .init(seconds: 0, microseconds: 0),
        received: SnapcastTimestamp = .init(seconds: 0, microseconds: 0), size: UInt32
    ) {
        self.type = type
        self.id = id
        self.refersTo = refersTo
        self.sent = sent
        self.received = received
        self.size = size
    }

    /// Reads a header, or nil (reading nothing) when fewer than 26 bytes are buffered.
    public static func read(from buffer: inout ByteBuffer) -> SnapcastHeader? {
        guard buffer.readableBytes >= size,
            let type = buffer.readInteger(endianness: .little, as: UInt16.self),
            let id = buffer.readInteger(endianness: .little, as: UInt16.self),
            let refersTo = buffer.readInteger(endianness: .little, as: UInt16.self),
            let sent = buffer.readSnapcastTimestamp(),
            let received = buffer.readSnapcastTimestamp(),
            let size = buffer.readInteger(endianness: .little, as: UInt32.self)
        else { return nil }
        return SnapcastHeader(type: type, id: id, refersTo: refersTo, sent: sent, received: received, size: size)
    }

    /// Appends the header to `buffer`.
    public func write(to buffer: inout ByteBuffer) {
        buffer.writeInteger(type, endianness: .little)
        buffer.writeInteger(id, endianness: .little)
        buffer.writeInteger(refersTo, endianness: .little)
        buffer.writeSnapcastTimestamp(sent)
        buffer.writeSnapcastTimestamp(received)
        buffer.writeInteger(size, endianness: .little)
    }
}

extension ByteBuffer {
    mutating func readSnapcastTimestamp() -> SnapcastTimestamp? {
        guard let seconds = readInteger(endianness: .little, as: Int32.self),
            let microseconds = readInteger(endianness: .little, as: Int32.self)
        else { return nil }
        return SnapcastTimestamp(seconds: seconds, microseconds: microseconds)
    }

    mutating func writeSnapcastTimestamp(_ time: SnapcastTimestamp) {
        writeInteger(time.seconds, endianness: .little)
        writeInteger(time.microseconds, endianness: .little)
    }

    /// A `uint32` length and that many bytes, or nil when the length runs past the end.
    mutating func readSnapcastBlob() -> ByteBuffer? {
        guard let length = getInteger(at: readerIndex, endianness: .little, as: UInt32.self),
            readableBytes - 4 >= Int(length)
        else { return nil }
        moveReaderIndex(forwardBy: 4)
        return readSlice(length: Int(length))
    }
}
