import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AudioGateServer

@Suite("openapi.yaml")
struct OpenAPIDocumentTests {
    /// The repository's top-level openapi.yaml, found from this file's path.
    static let sourceURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("openapi.yaml")

    @Test("the copy the build embeds is byte for byte openapi.yaml")
    func embeddedCopyMatches() throws {
        let source = try Data(contentsOf: Self.sourceURL)
        #expect(Data(OpenAPIDocument.yaml.utf8) == source)
    }

    @Test("GET /openapi.yaml serves the document as application/yaml without a token")
    func served() async throws {
        let (_, app) = TestServer.make(TestServer.configuration(device: "loopback") { $0.token = "secret" })
        try await app.test(.live) { client in
            let response = try await client.execute(uri: "/openapi.yaml", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/yaml")
            #expect(String(decoding: response.body.readableBytesView, as: UTF8.self) == OpenAPIDocument.yaml)
        }
    }
}
