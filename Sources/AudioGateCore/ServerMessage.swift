/// A message the server sends as a WebSocket text frame.
public protocol ServerMessage: Sendable, Codable, Equatable {
    /// The value of the `"type"` field.
    static var type: String { get }
    /// Compact JSON with the snake_case keys of the API.
    func json() -> String
}

/// Throws when a decoded message's `type` is not the expected one.
func checkType<Key: CodingKey>(
    _ container: KeyedDecodingContainer<Key>, _ key: Key, _ expected: String
) throws {
    let type = try container.decode(String.self, forKey: key)
    guard type == expected else {
        throw DecodingError.dataCorruptedError(
            forKey: key, in: container, debugDescription: "expected type \"\(expected)\", got \"\(type)\"")
    }
}
