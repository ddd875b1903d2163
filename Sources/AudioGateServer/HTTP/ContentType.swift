import Foundation

/// The one reading of a `Content-Type` header that every body check uses.
enum ContentType {
    /// The media type (`type/subtype`), lowercased, without parameters; nil without a header.
    static func mediaType(_ value: String?) -> String? {
        guard let value else { return nil }
        return value.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
    }
}
