import Hummingbird

/// Refuses a query parameter the route does not take with a 400 naming it, so a misspelt or
/// misplaced parameter is never silently ignored (see `Route.parameters`).
struct QueryCheckMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let keys = request.uri.queryParameters.map { String($0.key) }
        if !keys.isEmpty, let error = RouteTable.unknownParameter(request.uri.path, method: request.method, keys: keys) {
            throw error
        }
        return try await next(request, context)
    }
}
