/// Walks the frames of a native FLAC file and finds how far it is intact: metadata whole, then every
/// frame with a valid header CRC-8 and frame CRC-16. Used to cut a file that was being written when
/// the process died back to its last complete frame.
public enum FLACFrames {
    /// What the intact part of a file holds.
    public struct Scan: Sendable, Equatable {
        /// Bytes from the start up to the end of the last intact frame.
        public var validLength: Int
        /// Offset of the STREAMINFO block's body (after `fLaC` and the block header).
        public var streamInfoOffset: Int
        /// Offset of the first frame (the end of the metadata).
        public var audioOffset: Int
        /// Intact frames.
        public var frameCount: Int
        /// Samples per channel in the intact frames.
        public var samples: Int
    }

    /// Scans from the start; nil when the metadata is not whole (no audio can be kept).
    public static func scan(_ bytes: UnsafeRawBufferPointer) -> Scan? {
        guard bytes.count >= 8, bytes[0] == 0x66, bytes[1] == 0x4C, bytes[2] == 0x61, bytes[3] == 0x43 else { return nil }
        // Metadata blocks: the first is STREAMINFO (type 0, 34 bytes); the last has the top bit set.
        guard bytes[4] & 0x7F == 0, read24(bytes, 5) == 34 else { return nil }
        var offset = 4
        while true {
            guard bytes.count - offset >= 4 else { return nil }
            let last = bytes[offset] & 0x80 != 0
            let length = read24(bytes, offset + 1)
            offset += 4 + length
            guard offset <= bytes.count else { return nil }
            if last { break }
        }
        var result = Scan(validLength: offset, streamInfoOffset: 8, audioOffset: offset, frameCount: 0, samples: 0)
        while let header = frameHeader(bytes, at: offset) {
            guard let end = frameEnd(bytes, start: offset, headerLength: header.length) else { break }
            result.frameCount += 1
            result.samples += header.blockSize
            result.validLength = end
            offset = end
        }
        return result
    }

    /// Writes `samples` into STREAMINFO's 36-bit total-samples field of a file's first bytes.
    public static func setTotalSamples(_ samples: Int, in streamInfo: inout [UInt8]) {
        // The field starts in the low nibble of byte 13 of the STREAMINFO body.
        guard streamInfo.count >= 18 else { return }
        let total = UInt64(max(0, min(samples, (1 << 36) - 1)))
        streamInfo[13] = (streamInfo[13] & 0xF0) | UInt8(truncatingIfNeeded: total >> 32)
        for index in 0..<4 { streamInfo[14 + index] = UInt8(truncatingIfNeeded: total >> (8 * UInt64(3 - index))) }
    }

    struct Header {
        var length: Int
        var blockSize: Int
    }

    /// The frame header at `offset` if its sync code, fields and CRC-8 are valid.
    static func frameHeader(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Header? {
        let available = bytes.count - offset
        guard available >= 6, bytes[offset] == 0xFF, bytes[offset + 1] & 0xFE == 0xF8 else { return nil }
        let blockCode = Int(bytes[offset + 2] >> 4)
        let rateCode = Int(bytes[offset + 2] & 0x0F)
        let channelCode = Int(bytes[offset + 3] >> 4)
        guard blockCode != 0, rateCode != 15, channelCode < 11, bytes[offset + 3] & 0x01 == 0 else { return nil }
        var position = offset + 4
        // The frame or sample number, UTF-8 style: the first byte's leading ones count the bytes.
        let lead = bytes[position]
        let extra: Int
        switch lead {
        case 0x00..<0x80: extra = 0
        case 0xC0..<0xE0: extra = 1
        case 0xE0..<0xF0: extra = 2
        case 0xF0..<0xF8: extra = 3
        case 0xF8..<0xFC: extra = 4
        case 0xFC..<0xFE: extra = 5
        case 0xFE: extra = 6
        default: return nil
        }
        guard available >= 4 + 1 + extra + 1 else { return nil }
        for index in 1...max(1, extra) where extra > 0 && bytes[position + index] & 0xC0 != 0x80 { return nil }
        position += 1 + extra
        var blockSize: Int
        switch blockCode {
        case 1: blockSize = 192
        case 2...5: blockSize = 576 << (blockCode - 2)
        case 6, 7:
            let size = blockCode == 6 ? 1 : 2
            guard bytes.count - position >= size + 1 else { return nil }
            blockSize = (size == 1 ? Int(bytes[position]) : Int(bytes[position]) << 8 | Int(bytes[position + 1])) + 1
            position += size
        default: blockSize = 256 << (blockCode - 8)
        }
        switch rateCode {
        case 12: position += 1
        case 13, 14: position += 2
        default: break
        }
        guard bytes.count - position >= 1 else { return nil }
        var crc: UInt8 = 0
        for index in offset..<position { crc = crc8Table[Int(crc ^ bytes[index])] }
        guard crc == bytes[position] else { return nil }
        return Header(length: position + 1 - offset, blockSize: blockSize)
    }

    /// Where the frame starting at `start` ends: the first point, at the next frame header or the end
    /// of the bytes, where the CRC-16 over the frame (its own CRC included) comes out zero.
    static func frameEnd(_ bytes: UnsafeRawBufferPointer, start: Int, headerLength: Int) -> Int? {
        var crc: UInt16 = 0
        var position = start
        // A frame is at least its header, one subframe byte and the CRC-16.
        let earliest = start + headerLength + 3
        while position < bytes.count {
            crc = (crc << 8) ^ crc16Table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ bytes[position])]
            position += 1
            guard position >= earliest, crc == 0 else { continue }
            if position == bytes.count || frameHeader(bytes, at: position) != nil || startsCutHeader(bytes, at: position) {
                return position
            }
        }
        return nil
    }

    /// Whether the bytes from `offset` are the start of a frame header that the end of the bytes cut short.
    private static func startsCutHeader(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        let left = bytes.count - offset
        return left < 16 && bytes[offset] == 0xFF && (left == 1 || bytes[offset + 1] & 0xFE == 0xF8)
    }

    private static func read24(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> Int {
        Int(bytes[offset]) << 16 | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
    }

    /// CRC-8, polynomial 0x07, initial value 0.
    static let crc8Table: [UInt8] = (0..<256).map { index in
        var value = UInt8(index)
        for _ in 0..<8 { value = value & 0x80 != 0 ? (value << 1) ^ 0x07 : value << 1 }
        return value
    }

    /// CRC-16, polynomial 0x8005, initial value 0.
    static let crc16Table: [UInt16] = (0..<256).map { index in
        var value = UInt16(index) << 8
        for _ in 0..<8 { value = value & 0x8000 != 0 ? (value << 1) ^ 0x8005 : value << 1 }
        return value
    }
}
