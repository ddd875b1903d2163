import Foundation

/// Writes a text file as a Swift raw string literal: `embed-documents SOURCE OUTPUT ENUM PROPERTY SUMMARY`.
///
/// The build runs it (the EmbedDocuments plugin); nothing it writes is kept in the repository.
@main
enum EmbedDocumentsTool {
    static func main() {
        let arguments = CommandLine.arguments
        guard arguments.count == 6 else { fail("usage: embed-documents SOURCE OUTPUT ENUM PROPERTY SUMMARY") }
        let (source, output, enumName, property, summary) = (arguments[1], arguments[2], arguments[3], arguments[4], arguments[5])
        guard let data = FileManager.default.contents(atPath: source), let text = String(data: data, encoding: .utf8) else {
            fail("cannot read \(source) as UTF-8")
        }
        // A raw string literal keeps backslashes and quotes literal; only its closing delimiter or a
        // raw escape could end it early, and Swift normalises CR line endings inside literals.
        if text.contains("\"\"\"##") || text.contains("\\##") {
            fail("\(source) contains '\"\"\"##' or '\\##', which the raw string literal cannot hold")
        }
        if text.contains("\r") { fail("\(source) has CR line endings, which Swift string literals normalise away") }
        guard text.hasSuffix("\n") else { fail("\(source) must end with a newline") }
        // The newline before the closing delimiter is not part of the literal: the blank line keeps
        // the file's own final newline.
        let swift = """
            // Generated at build time from \(URL(fileURLWithPath: source).lastPathComponent).

            /// \(summary)
            enum \(enumName) {
                /// The document's text.
                static let \(property) = ##\"\"\"
            \(text)
            \"\"\"##
            }

            """
        do {
            try Data(swift.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            fail("cannot write \(output): \(error)")
        }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("embed-documents: \(message)\n".utf8))
        exit(1)
    }
}
