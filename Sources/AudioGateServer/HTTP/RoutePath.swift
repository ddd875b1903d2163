/// The one spelling of a request path that every rule and the router see.
///
/// A path has many spellings that the router resolves alike (`//v1/info`, `/v1/info/`,
/// `/v1/%69nfo`, `/x/../v1/info`); a rule that reads the raw path sees another route than the
/// router serves. `UpgradeGuard` rewrites each request head to this spelling before anything else
/// reads it, and the security policy canonicalises again, so neither depends on the other.
enum RoutePath {
    /// Empty segments dropped (repeated and trailing slashes), percent-encoded unreserved characters
    /// decoded (RFC 3986 6.2.2.2) and other escapes upper-cased, `.` and `..` segments resolved
    /// (RFC 3986 5.2.4; `..` stops at the root). An encoded slash stays inside its segment.
    static func canonical(_ raw: some StringProtocol) -> String {
        var segments: [String] = []
        for segment in raw.utf8.split(separator: UInt8(ascii: "/")) {
            let decoded = decodeUnreserved(segment)
            switch decoded {
            case ".": continue
            case "..": _ = segments.popLast()
            default: segments.append(decoded)
            }
        }
        return "/" + segments.joined(separator: "/")
    }

    /// The canonical path's segments.
    static func segments(_ canonical: String) -> [Substring] {
        canonical.split(separator: "/")
    }

    private static func decodeUnreserved(_ bytes: some Collection<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            let second = bytes.index(after: index)
            guard byte == UInt8(ascii: "%"), second != bytes.endIndex, bytes.index(after: second) != bytes.endIndex,
                let high = hexValue(bytes[second]), let low = hexValue(bytes[bytes.index(after: second)])
            else {
                output.append(byte)
                index = second
                continue
            }
            let value = high << 4 | low
            if isUnreserved(value) {
                output.append(value)
            } else {
                output.append(contentsOf: [UInt8(ascii: "%"), hexDigit(high), hexDigit(low)])
            }
            index = bytes.index(index, offsetBy: 3)
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }
}
