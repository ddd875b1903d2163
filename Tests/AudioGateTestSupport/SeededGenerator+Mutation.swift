extension SeededGenerator {
    /// Numbers a decoder must bound: zero, one, all ones, and the edges of the signed and unsigned
    /// 16-, 32- and 64-bit ranges, each written little endian by `mutate`.
    public static let edgeIntegers: [UInt64] = [
        0, 1, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFE, 0xFFFF_FFFF,
        0x7FFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0000, 0xFFFF_FFFF_FFFF_FFFF,
    ]

    /// Numbers as JSON and query text spell them: the ends of Int64 and past them, negatives,
    /// fractions and exponents.
    public static let edgeNumberTexts: [String] = [
        "0", "-1", "1", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "18446744073709551616",
        "1e308", "1e400", "-1e400", "4294967296", "2147483648", "-2147483649", "0.5", "1e-400", "00", "-0",
    ]

    /// One seeded mutation of `input`: 1 to `edits` bit flips, byte overwrites, edge integers written
    /// over a field, inserted random bytes or `tokens`, deletions, a repeated stretch, truncation or
    /// a splice from `other`. Offsets favour the first `headBytes`, where parsers read lengths.
    /// The one mutation routine of every fuzz test, so each explores the same kinds of damage.
    public mutating func mutate(
        _ input: [UInt8], other: [UInt8] = [], tokens: [[UInt8]] = [], edits: Int = 8, headBytes: Int = 512
    ) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...max(1, edits), using: &self) {
            guard !bytes.isEmpty else {
                bytes = self.bytes(Int.random(in: 1...16, using: &self))
                continue
            }
            let anywhere = Int.random(in: 0..<bytes.count, using: &self)
            let head = Int.random(in: 0..<min(bytes.count, max(1, headBytes)), using: &self)
            let at = Bool.random(using: &self) ? head : anywhere
            switch Int.random(in: 0..<10, using: &self) {
            case 0: bytes[at] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &self)
            case 1: bytes[at] = UInt8.random(in: 0...255, using: &self)
            case 2:
                let value = Self.edgeIntegers.randomElement(using: &self)!
                let width = [1, 2, 4, 8].randomElement(using: &self)!
                for index in 0..<width where at + index < bytes.count {
                    bytes[at + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))
                }
            case 3: bytes.insert(contentsOf: self.bytes(Int.random(in: 1...16, using: &self)), at: at)
            case 4:
                let token =
                    tokens.isEmpty || Bool.random(using: &self)
                    ? Array(Self.edgeNumberTexts.randomElement(using: &self)!.utf8) : tokens.randomElement(using: &self)!
                if Bool.random(using: &self) {
                    bytes.insert(contentsOf: token, at: at)
                } else {
                    bytes.replaceSubrange(at..<min(bytes.count, at + token.count), with: token)
                }
            case 5: bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...64, using: &self)))
            case 6:
                let end = min(bytes.count, at + Int.random(in: 1...256, using: &self))
                let stretch = Array(bytes[at..<end])
                bytes.insert(contentsOf: stretch, at: end)
            case 7: bytes.removeSubrange(anywhere...)
            case 8 where !other.isEmpty:
                let from = Int.random(in: 0..<other.count, using: &self)
                bytes.replaceSubrange(anywhere..., with: other[from...])
            default:
                bytes[head] = [0x00, 0xFF, 0x7F, 0x80][Int.random(in: 0..<4, using: &self)]
            }
        }
        return bytes
    }
}
