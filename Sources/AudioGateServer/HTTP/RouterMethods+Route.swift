import Hummingbird

extension RouterMethods {
    /// Registers the handler of a declared route (`RouteTable`), so the router serves only what the
    /// table declares.
    @discardableResult
    func on(
        _ route: Route, use handler: @Sendable @escaping (Request, Context) async throws -> some ResponseGenerator
    ) -> Self {
        on(RouterPath(route.path), method: route.method, use: handler)
    }
}
