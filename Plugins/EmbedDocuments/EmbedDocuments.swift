import Foundation
import PackagePlugin

/// Embeds the served documents (openapi.yaml, the demo page, the browser module) in the server at build time, so a
/// binary copied anywhere serves them, while the repository holds each document once.
@main
struct EmbedDocuments: BuildToolPlugin {
    /// A document and the Swift enum that carries it.
    struct Document {
        let path: String
        let enumName: String
        let property: String
        let summary: String
    }

    static let documents = [
        Document(
            path: "openapi.yaml", enumName: "OpenAPIDocument", property: "yaml",
            summary: "The API description served at `GET /openapi.yaml`, byte for byte the repository's openapi.yaml."),
        Document(
            path: "examples/browser/index.html", enumName: "DemoPage", property: "html",
            summary: "The browser demo page served at `GET /`, byte for byte the repository's examples/browser/index.html."),
        Document(
            path: "clients/browser/audiogate.js", enumName: "BrowserModule", property: "javascript",
            summary: "The browser module served at `GET /v1/audiogate.js`, byte for byte the repository's clients/browser/audiogate.js."),
    ]

    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let tool = try context.tool(named: "embed-documents")
        return Self.documents.map { document in
            let input = context.package.directoryURL.appending(path: document.path)
            let output = context.pluginWorkDirectoryURL.appending(path: "\(document.enumName).swift")
            return .buildCommand(
                displayName: "Embedding \(document.path)",
                executable: tool.url,
                arguments: [input.path, output.path, document.enumName, document.property, document.summary],
                inputFiles: [input],
                outputFiles: [output])
        }
    }
}
