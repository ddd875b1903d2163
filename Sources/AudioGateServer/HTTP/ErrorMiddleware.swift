import Hummingbird
import Logging

/// Turns every error (router 404s included) into the JSON error shape.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            var apiError = APIError(mapping: error)
            let allow = apiError.code == .notFound ? RouteTable.allow(request.uri.path, method: request.method) : nil
            if let allow {
                apiError = APIError(.methodNotAllowed, "\(request.method.rawValue) is not allowed on \(request.uri.path); use \(allow)")
            }
            if apiError.code == .internalError {
                context.logger.error("request failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            }
            var response = try apiError.response(from: request, context: context)
            if let allow { response.headers[.allow] = allow }
            return response
        }
    }
}
