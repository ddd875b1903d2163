import Foundation

/// ISO 8601 times with milliseconds in UTC, as the recordings API shows them.
enum Timestamp {
    private static let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    static func format(_ date: Date) -> String { style.format(date) }

    static func parse(_ text: String) -> Date? { try? style.parse(text) }
}
