import Foundation

/// The body of `POST /v1/say`, validated.
struct SpeechRequest: Sendable {
    /// Longest text, in characters.
    static let maximumCharacters = 4000
    /// Largest body read.
    static let maximumBodyBytes = 64 * 1024
    /// Speaking rates (1.0 is espeak-ng's 175 words per minute).
    static let rates = 0.5...2.5

    var text: String
    var voice: String
    var rate: Double
    var stream: String

    private struct Body: Decodable {
        var text: String?
        var voice: String?
        var rate: Double?
        var stream: String?
    }

    /// Parses the body; `queryStream` is a validated `?stream=` that names the stream instead of the
    /// body's (both given and different is a 400).
    init(json: Data, queryStream: String? = nil) throws(APIError) {
        let body: Body
        do {
            body = try JSONDecoder().decode(Body.self, from: json)
        } catch {
            throw APIError(.badBody, #"expected {"text": "...", "voice": "en-us", "rate": 1.0, "stream": "default"}"#)
        }
        let text = body.text ?? ""
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw APIError(.badBody, "'text' is empty: send the words to speak")
        }
        guard text.count <= Self.maximumCharacters else {
            throw APIError(.tooLarge, "'text' has \(text.count) characters; at most \(Self.maximumCharacters) are spoken per request")
        }
        let rate = body.rate ?? 1
        guard rate.isFinite, Self.rates.contains(rate) else { throw APIError(.badBody, "'rate' must be between 0.5 and 2.5") }
        let voice = body.voice ?? "en-us"
        guard !voice.isEmpty, voice.utf8.count <= 64, voice.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw APIError(.badBody, "'voice' must be a voice name from GET /v1/voices")
        }
        self.text = text
        self.voice = voice
        self.rate = rate
        let bodyStream = try body.stream.map { name throws(APIError) in
            do throws(PlaybackError) { return try PlaybackParameters.validatedStreamName(name) } catch { throw APIError(error) }
        }
        if let queryStream, let bodyStream, queryStream != bodyStream {
            throw APIError.parameter("stream", "the query names '\(queryStream)' and the body '\(bodyStream)': give one")
        }
        self.stream = queryStream ?? bodyStream ?? "default"
    }

    /// espeak-ng's words per minute for `rate`.
    var wordsPerMinute: Int { Int((175 * rate).rounded()) }
}
