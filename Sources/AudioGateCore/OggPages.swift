/// Walks the pages of an Ogg file (RFC 3533) and finds how far it is intact: every page whole and
/// its CRC right. Used to cut a file that was being written when the process died back to its last
/// complete page.
public enum OggPages {
    /// What the intact part of a file holds.
    public struct Scan: Sendable, Equatable {
        /// Bytes from the start up to the end of the last intact page.
        public var validLength: Int
        /// Intact pages.
        public var pageCount: Int
        /// The granule position of the last intact page that has one (-1: none yet).
        public var lastGranule: Int64
        /// The Opus pre-skip from an `OpusHead` in the first page (nil for other codecs).
        public var opusPreSkip: Int?
        /// Whether the last intact page ends the stream (a finished file).
        public var ended: Bool
    }

    /// Fixed part of a page header, before the segment table.
    static let headerBytes = 27

    /// Scans from the start; stops at the first page that is incomplete, has a bad CRC or belongs to another stream.
    public static func scan(_ bytes: UnsafeRawBufferPointer) -> Scan {
        var result = Scan(validLength: 0, pageCount: 0, lastGranule: -1, opusPreSkip: nil, ended: false)
        var offset = 0
        var serial: UInt32?
        while let page = page(in: bytes, at: offset) {
            if let serial, page.serial != serial { break }
            serial = page.serial
            if result.pageCount == 0 { result.opusPreSkip = opusPreSkip(bytes, page) }
            result.pageCount += 1
            result.validLength = offset + page.length
            if page.granule != -1 { result.lastGranule = page.granule }
            result.ended = page.headerType & 0x04 != 0
            offset += page.length
            if result.ended { break }
        }
        return result
    }

    struct Page {
        var length: Int
        var headerLength: Int
        var headerType: UInt8
        var granule: Int64
        var serial: UInt32
    }

    /// The page at `offset` if it is whole and its CRC matches.
    static func page(in bytes: UnsafeRawBufferPointer, at offset: Int) -> Page? {
        guard bytes.count - offset >= headerBytes,
            bytes[offset] == 0x4F, bytes[offset + 1] == 0x67, bytes[offset + 2] == 0x67, bytes[offset + 3] == 0x53,
            bytes[offset + 4] == 0
        else { return nil }
        let segments = Int(bytes[offset + 26])
        let headerLength = headerBytes + segments
        guard bytes.count - offset >= headerLength else { return nil }
        var bodyLength = 0
        for index in 0..<segments { bodyLength += Int(bytes[offset + headerBytes + index]) }
        let length = headerLength + bodyLength
        guard bytes.count - offset >= length else { return nil }
        let stored = read32(bytes, offset + 22)
        // The CRC is computed with its own field as zeros.
        var crc: UInt32 = 0
        for index in 0..<length {
            let byte = (index >= 22 && index < 26) ? 0 : bytes[offset + index]
            crc = (crc << 8) ^ crcTable[Int(UInt8(truncatingIfNeeded: crc >> 24) ^ byte)]
        }
        guard crc == stored else { return nil }
        var granule: UInt64 = 0
        for index in 0..<8 { granule |= UInt64(bytes[offset + 6 + index]) << (8 * UInt64(index)) }
        return Page(
            length: length, headerLength: headerLength, headerType: bytes[offset + 5], granule: Int64(bitPattern: granule),
            serial: read32(bytes, offset + 14))
    }

    /// The pre-skip of an `OpusHead` packet opening the first page.
    private static func opusPreSkip(_ bytes: UnsafeRawBufferPointer, _ page: Page) -> Int? {
        let body = page.headerLength
        guard page.length - body >= 19 else { return nil }
        let magic: [UInt8] = Array("OpusHead".utf8)
        for index in 0..<8 where bytes[body + index] != magic[index] { return nil }
        return Int(bytes[body + 10]) | Int(bytes[body + 11]) << 8
    }

    private static func read32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }

    /// CRC-32 with polynomial 0x04C11DB7, unreflected, initial value 0 (Ogg's own).
    static let crcTable: [UInt32] = (0..<256).map { index in
        var value = UInt32(index) << 24
        for _ in 0..<8 { value = value & 0x8000_0000 != 0 ? (value << 1) ^ 0x04C1_1DB7 : value << 1 }
        return value
    }
}
