import Hummingbird
import Logging

/// Turns every error (router 404s included) into the JSON error shape.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let apiError = APIError(mapping: error)
            if apiError.code == .internalError {
                context.logger.error("request failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            }
            return try apiError.response(from: request, context: context)
        }
    }
}
