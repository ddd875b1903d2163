import Hummingbird
import NIOCore

extension AudioGateServer {
    /// `GET /openapi.yaml`: the API description, public like `/healthz` because it reveals nothing
    /// a copy of the project would not.
    func addDocsRoutes(to router: Router<AudioGateRequestContext>) {
        // Encoded once; every response shares the bytes (ByteBuffer is copy-on-write).
        let document = ByteBuffer(string: OpenAPIDocument.yaml)
        router.on(RouteTable.document) { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/yaml", .cacheControl: "no-cache"],
                body: .init(byteBuffer: document))
        }
    }
}
