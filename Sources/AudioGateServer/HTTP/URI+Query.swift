import HummingbirdCore

extension URI {
    /// The query as a plain dictionary; a repeated parameter takes its last value.
    var queryDictionary: [String: String] {
        var result: [String: String] = [:]
        for (key, value) in queryParameters { result[String(key)] = String(value) }
        return result
    }
}
