import Hummingbird

extension CaptureParameters {
    /// Parses the query of a capture request; throws a 400 naming the bad parameter.
    init(request: Request) throws(APIError) {
        var query: [String: String] = [:]
        for (key, value) in request.uri.queryParameters {
            query[String(key)] = String(value)
        }
        try self.init(query: query)
    }
}
