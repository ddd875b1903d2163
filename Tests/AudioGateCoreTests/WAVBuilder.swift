/// Hand-assembles RIFF files for parser tests, including ones the encoder would never write.
struct WAVBuilder {
    var chunks: [(id: String, body: [UInt8])] = []
    var riffSize: UInt32?
    var form = "WAVE"

    static func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
    static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    static func fmt(tag: Int, channels: Int, rate: Int, bits: Int, blockAlign: Int? = nil) -> [UInt8] {
        let align = blockAlign ?? channels * bits / 8
        return le16(tag) + le16(channels) + le32(UInt32(rate)) + le32(UInt32(rate * align)) + le16(align) + le16(bits)
    }

    /// WAVE_FORMAT_EXTENSIBLE with a KSDATAFORMAT_SUBTYPE GUID whose first bytes are `subformat`.
    static func extensible(subformat: Int, channels: Int, rate: Int, bits: Int, validBits: Int? = nil) -> [UInt8] {
        fmt(tag: 0xFFFE, channels: channels, rate: rate, bits: bits) + le16(22) + le16(validBits ?? bits)
            + le32(channels == 2 ? 3 : 4) + le16(subformat)
            + [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
    }

    mutating func add(_ id: String, _ body: [UInt8]) { chunks.append((id, body)) }

    /// Serialises; a chunk named "data" gets `dataSize` in its size field when given.
    func bytes(dataSize: UInt32? = nil) -> [UInt8] {
        var body = Array(form.utf8)
        for chunk in chunks {
            body += Array(chunk.id.utf8)
            let size = chunk.id == "data" ? (dataSize ?? UInt32(chunk.body.count)) : UInt32(chunk.body.count)
            body += Self.le32(size) + chunk.body
            if chunk.body.count % 2 == 1 { body.append(0) }
        }
        return Array("RIFF".utf8) + Self.le32(riffSize ?? UInt32(body.count)) + body
    }
}
