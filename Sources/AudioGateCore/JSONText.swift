/// Minimal compact-JSON building blocks for the server's hand-written messages.
public enum JSONText {
    /// `text` as a JSON string literal, quotes included.
    public static func quoted(_ text: String) -> String {
        var output = "\""
        output.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case let c where c.value < 0x20 || c.value == 0x2028 || c.value == 0x2029:
                // Control characters must be escaped; U+2028/9 break JavaScript embedding.
                let hex = String(c.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
        return output
    }

    /// A JSON number for `value`; non-finite values (which JSON cannot carry) become `fallback`.
    public static func number(_ value: Double, fallback: Double = 0) -> String {
        let finite = value.isFinite ? value : fallback
        if finite == finite.rounded(), abs(finite) < 1e15 {
            return String(Int64(finite))
        }
        return String(finite)
    }

    /// A JSON number for `value` rounded to `decimals` places (at most 6).
    public static func number(_ value: Double, decimals: Int, fallback: Double = 0) -> String {
        let finite = value.isFinite ? value : fallback
        var scale = 1.0
        for _ in 0..<min(max(decimals, 0), 6) { scale *= 10 }
        return number((finite * scale).rounded() / scale, fallback: fallback)
    }
}
