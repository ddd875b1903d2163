/// Standard-alphabet base64 (RFC 4648 section 4) without Foundation, for the hot JSON audio path.
public enum Base64 {
    @usableFromInline
    static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// 255 marks a byte outside the alphabet.
    static let reverse: [UInt8] = {
        var table = [UInt8](repeating: 255, count: 256)
        for (index, symbol) in alphabet.enumerated() { table[Int(symbol)] = UInt8(index) }
        return table
    }()

    /// Length of the padded encoding of `byteCount` bytes.
    public static func encodedLength(_ byteCount: Int) -> Int { (byteCount + 2) / 3 * 4 }

    /// Encodes bytes with `=` padding.
    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: encodedLength(bytes.count)) { output in
            encode(bytes, into: UnsafeMutableRawBufferPointer(output))
        }
    }

    /// Encodes bytes with `=` padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { encode($0) }
    }

    /// Writes the padded encoding into `output` (at least `encodedLength(bytes.count)` long); returns bytes written.
    @discardableResult
    public static func encode(_ bytes: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
        let length = encodedLength(bytes.count)
        guard length > 0, length <= output.count, let src = bytes.baseAddress, let dst = output.baseAddress else {
            return 0
        }
        let input = src.assumingMemoryBound(to: UInt8.self)
        let out = dst.assumingMemoryBound(to: UInt8.self)
        return alphabet.withUnsafeBufferPointer { table in
            let symbols = table.baseAddress!
            var i = 0
            var o = 0
            let whole = bytes.count / 3 * 3
            while i < whole {
                let chunk = UInt32(input[i]) << 16 | UInt32(input[i &+ 1]) << 8 | UInt32(input[i &+ 2])
                out[o] = symbols[Int(chunk >> 18)]
                out[o &+ 1] = symbols[Int(chunk >> 12 & 63)]
                out[o &+ 2] = symbols[Int(chunk >> 6 & 63)]
                out[o &+ 3] = symbols[Int(chunk & 63)]
                i &+= 3
                o &+= 4
            }
            let rest = bytes.count - whole
            if rest > 0 {
                let second = rest == 2 ? UInt32(input[i &+ 1]) : 0
                let chunk = UInt32(input[i]) << 16 | second << 8
                out[o] = symbols[Int(chunk >> 18)]
                out[o &+ 1] = symbols[Int(chunk >> 12 & 63)]
                out[o &+ 2] = rest == 2 ? symbols[Int(chunk >> 6 & 63)] : UInt8(ascii: "=")
                out[o &+ 3] = UInt8(ascii: "=")
                o &+= 4
            }
            return o
        }
    }

    /// Decodes standard base64; padding is optional, whitespace and other characters are rejected (nil).
    public static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode(UnsafeRawBufferPointer($0)) }
    }

    /// Decodes standard base64 from UTF-8 bytes; nil on any invalid input.
    public static func decode(_ encoded: UnsafeRawBufferPointer) -> [UInt8]? {
        var length = encoded.count
        if length % 4 == 0 {
            // At most two pad characters, only at the very end.
            if length > 0, encoded[length - 1] == UInt8(ascii: "=") { length -= 1 }
            if length > 0, encoded[length - 1] == UInt8(ascii: "=") { length -= 1 }
        }
        if length % 4 == 1 { return nil }
        let outputLength = length / 4 * 3 + max(0, length % 4 - 1)
        var valid = true
        let result = reverse.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: outputLength) { output, initialized in
                var accumulator: UInt32 = 0
                var bits = 0
                var o = 0
                for i in 0..<length {
                    let value = table[Int(encoded[i])]
                    if value == 255 {
                        valid = false
                        break
                    }
                    accumulator = accumulator << 6 | UInt32(value)
                    bits += 6
                    if bits >= 8 {
                        bits -= 8
                        output[o] = UInt8(truncatingIfNeeded: accumulator >> UInt32(bits))
                        o += 1
                    }
                }
                initialized = valid ? o : 0
            }
        }
        return valid ? result : nil
    }
}
