import Foundation

/// Where the bearer token comes from: `--token`/`AUDIOGATE_TOKEN` or `--token-file`/`AUDIOGATE_TOKEN_FILE`
/// (one of them), so a deployment can keep it out of `ps` and out of a world-readable file.
struct TokenSource {
    struct Invalid: Error {
        var message: String
    }

    /// The token, or nil when none is configured.
    let token: String?

    init(flag: String?, file: String?) throws(Invalid) {
        let text = flag ?? Environment.string("token")
        let path = file ?? Environment.string("token-file")
        switch (text, path) {
        case (nil, nil):
            token = nil
        case (let text?, nil):
            token = try Self.checked(text, from: "--token")
        case (nil, let path?):
            token = try Self.checked(Self.read(path), from: "--token-file \(path)")
        case (_?, _?):
            throw Invalid(message: "pass the token once: --token (AUDIOGATE_TOKEN) or --token-file (AUDIOGATE_TOKEN_FILE), not both")
        }
    }

    /// The file's first line without its line ending; a token file is small, so more is refused.
    private static func read(_ path: String) throws(Invalid) -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw Invalid(message: "--token-file \(path) cannot be read")
        }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 4097), data.count <= 4096 else {
            throw Invalid(message: "--token-file \(path) is not a token file (larger than 4 KiB or unreadable)")
        }
        let text = String(decoding: data, as: UTF8.self)
        return String(text.prefix { $0 != "\n" && $0 != "\r" })
    }

    private static func checked(_ token: String, from source: String) throws(Invalid) -> String {
        let trimmed = token.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw Invalid(message: "\(source): the token is empty") }
        guard trimmed.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw Invalid(message: "\(source): the token must be printable ASCII without spaces (it travels in a header)")
        }
        return trimmed
    }
}
