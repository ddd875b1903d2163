import Foundation

/// Recording identifiers: made by the server, and checked before any lookup so that no client
/// string ever becomes part of a path.
enum RecordingID {
    private static let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyz")

    /// `20261121-101500-k3f9q2`: sortable by start time, unique by its random tail.
    static func make(at date: Date = Date()) -> String {
        let components = Calendar(identifier: .gregorian).dateComponents(
            in: TimeZone(identifier: "UTC") ?? .current, from: date)
        let stamp = String(
            format: "%04d%02d%02d-%02d%02d%02d", components.year ?? 0, components.month ?? 0, components.day ?? 0,
            components.hour ?? 0, components.minute ?? 0, components.second ?? 0)
        var generator = SystemRandomNumberGenerator()
        let tail = String((0..<6).map { _ in alphabet[Int(generator.next(upperBound: UInt(alphabet.count)))] })
        return stamp + "-" + tail
    }

    /// Whether `text` has the shape of an id: 1-64 of `0-9 a-z -`, not starting with `-`.
    static func isValid(_ text: some StringProtocol) -> Bool {
        guard (1...64).contains(text.utf8.count), text.utf8.first != UInt8(ascii: "-") else { return false }
        return text.utf8.allSatisfy { byte in
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || byte == UInt8(ascii: "-")
        }
    }
}
