import HTTPTypes
import Hummingbird

/// Enforces the security defaults on every request and WebSocket upgrade, in order: Host (421),
/// Origin (403), CORS preflight, the route (404 when undeclared), the bearer token (401 on every
/// route not declared public).
struct SecurityMiddleware<Context: RequestContext>: RouterMiddleware {
    let policy: SecurityPolicy

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let host = request.head.authority
        let origin = request.headers[.origin]
        if request.method == .options, let origin, policy.allowsHost(host), policy.allowsOrigin(origin, host: host) {
            return preflight(origin: origin)
        }
        if let refusal = policy.refusal(
            method: request.method, path: request.uri.path, host: host, origin: origin, authorization: request.headers[.authorization],
            queryToken: request.uri.queryParameters.get("token"))
        {
            throw refusal
        }
        var response = try await next(request, context)
        if let origin {
            response.headers[.accessControlAllowOrigin] = origin
            response.headers[.vary] = "Origin"
        }
        return response
    }

    private func preflight(origin: String) -> Response {
        Response(
            status: .noContent,
            headers: [
                .accessControlAllowOrigin: origin,
                .accessControlAllowMethods: "GET, POST, PUT, DELETE, OPTIONS",
                .accessControlAllowHeaders: "Authorization, Content-Type",
                .accessControlMaxAge: "600",
                .vary: "Origin",
            ])
    }
}
