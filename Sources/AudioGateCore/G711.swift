/// ITU-T G.711 μ-law and A-law companding by table lookup (one byte a sample, 8 kHz telephony audio).
///
/// Decoding is the standard segment expansion (Sun's g711.c, as in ffmpeg's `pcm_mulaw`/`pcm_alaw`).
/// Encoding maps each 16-bit sample to the code whose decoded value is nearest, built from the
/// decoder the way ffmpeg builds its encoder tables, so both produce the same bytes for the same input.
public enum G711 {
    /// μ-law code to 16-bit linear value.
    public static func muLawToLinear(_ code: UInt8) -> Int16 {
        let value = ~code
        var magnitude = (Int32(value & 0x0F) << 3) + 0x84
        magnitude <<= Int32((value & 0x70) >> 4)
        return Int16(value & 0x80 != 0 ? 0x84 - magnitude : magnitude - 0x84)
    }

    /// A-law code to 16-bit linear value.
    public static func aLawToLinear(_ code: UInt8) -> Int16 {
        let value = code ^ 0x55
        var magnitude = Int32(value & 0x0F)
        let segment = Int32((value & 0x70) >> 4)
        if segment != 0 {
            magnitude = (magnitude + magnitude + 1 + 32) << (segment + 2)
        } else {
            magnitude = (magnitude + magnitude + 1) << 3
        }
        return Int16(value & 0x80 != 0 ? magnitude : -magnitude)
    }

    /// Code to Float in [-1, 1), for each law.
    @usableFromInline
    static let muLawDecodeTable: [Float] = (0...255).map { Float(muLawToLinear(UInt8($0))) / 32768 }
    @usableFromInline
    static let aLawDecodeTable: [Float] = (0...255).map { Float(aLawToLinear(UInt8($0))) / 32768 }

    /// Code for each 14-bit linear value ((sample + 32768) >> 2).
    @usableFromInline
    static let muLawEncodeTable: [UInt8] = encodeTable(mask: 0xFF, decode: muLawToLinear)
    @usableFromInline
    static let aLawEncodeTable: [UInt8] = encodeTable(mask: 0xD5, decode: aLawToLinear)

    /// 16-bit linear sample to μ-law code (nearest level).
    public static func linearToMuLaw(_ sample: Int16) -> UInt8 { muLawEncodeTable[(Int(sample) + 32768) >> 2] }

    /// 16-bit linear sample to A-law code (nearest level).
    public static func linearToALaw(_ sample: Int16) -> UInt8 { aLawEncodeTable[(Int(sample) + 32768) >> 2] }

    /// Walks the 128 magnitudes of one sign; every 14-bit value below the midpoint between two
    /// neighbouring levels takes the lower level's code. The mask turns a magnitude index into the
    /// law's code (μ-law inverts all bits, A-law toggles the even ones).
    private static func encodeTable(mask: UInt8, decode: (UInt8) -> Int16) -> [UInt8] {
        var table = [UInt8](repeating: 0, count: 16384)
        table[8192] = mask
        var j = 1
        for i in 0..<127 {
            let low = Int(decode(UInt8(i) ^ mask))
            let high = Int(decode(UInt8(i + 1) ^ mask))
            let midpoint = (low + high + 4) >> 3
            while j < midpoint {
                table[8192 - j] = UInt8(i) ^ (mask ^ 0x80)
                table[8192 + j] = UInt8(i) ^ mask
                j += 1
            }
        }
        while j < 8192 {
            table[8192 - j] = 127 ^ (mask ^ 0x80)
            table[8192 + j] = 127 ^ mask
            j += 1
        }
        table[0] = table[1]
        return table
    }
}
