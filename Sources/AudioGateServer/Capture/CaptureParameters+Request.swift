import Hummingbird

extension CaptureParameters {
    /// Parses the query of a capture request; throws a 400 naming the bad parameter.
    init(request: Request) throws(CaptureError) {
        try self.init(query: request.uri.queryDictionary)
    }
}
