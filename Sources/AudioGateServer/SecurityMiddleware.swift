import HTTPTypes
import Hummingbird

/// Enforces the security defaults on every request and WebSocket upgrade, in order: Host (421),
/// Origin (403), CORS preflight, bearer token (401 on `/v1` and `/metrics`).
struct SecurityMiddleware<Context: RequestContext>: RouterMiddleware {
    let policy: SecurityPolicy

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let host = request.head.authority
        guard policy.allowsHost(host) else {
            throw APIError(.misdirectedRequest, "Host '\(host ?? "")' is not this server; use localhost or pass --allow-host")
        }
        let origin = request.headers[.origin]
        if let origin, !policy.allowsOrigin(origin, host: host) {
            throw APIError(.forbiddenOrigin, "Origin '\(origin)' may not use this server; pass --allow-origin to allow it")
        }
        if request.method == .options, let origin {
            return preflight(origin: origin)
        }
        let path = request.uri.path
        if path.hasPrefix("/v1/") || path == "/v1" || path == "/metrics" {
            let queryToken = request.uri.queryParameters.get("token")
            guard policy.allowsToken(authorization: request.headers[.authorization], queryToken: queryToken) else {
                throw APIError(.unauthorized, "missing or wrong token: send 'Authorization: Bearer TOKEN'")
            }
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
