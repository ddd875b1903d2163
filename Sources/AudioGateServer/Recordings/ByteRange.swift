import Foundation

/// The one byte range a `Range` header asks for (RFC 9110 section 14).
enum ByteRange: Equatable {
    /// No usable range: send the whole representation (no header, another unit, bad syntax or
    /// several ranges, which a server may answer in full).
    case whole
    /// Send these bytes with 206.
    case partial(ClosedRange<Int>)
    /// The range starts beyond the end: 416.
    case unsatisfiable

    /// Parses `bytes=a-b`, `bytes=a-` or `bytes=-n` against a representation of `length` bytes.
    init(header: String?, length: Int) {
        guard let header, header.hasPrefix("bytes=") else {
            self = .whole
            return
        }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else {
            self = .whole
            return
        }
        let first = spec[..<dash]
        let last = spec[spec.index(after: dash)...]
        let digits = { (text: Substring) in !text.isEmpty && text.count <= 18 && text.allSatisfy(\.isASCIIDigit) }
        if first.isEmpty {
            guard digits(last), let suffix = Int(last) else {
                self = .whole
                return
            }
            guard suffix > 0, length > 0 else {
                self = .unsatisfiable
                return
            }
            self = .partial(max(0, length - suffix)...(length - 1))
            return
        }
        guard digits(first), let start = Int(first), last.isEmpty || digits(last) else {
            self = .whole
            return
        }
        let end = last.isEmpty ? length - 1 : min(Int(last) ?? length - 1, length - 1)
        guard last.isEmpty || (Int(last) ?? 0) >= start else {
            self = .whole
            return
        }
        guard start < length else {
            self = .unsatisfiable
            return
        }
        self = .partial(start...end)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
