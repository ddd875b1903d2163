import Foundation

/// The body of `POST /v1/say`, validated.
struct SpeechRequest: Sendable {
    /// Longest text, in characters.
    static let maximumCharacters = 4000
    /// Largest body read.
    static let maximumBodyBytes = 64 * 1024
    /// Speaking rates (1.0 is espeak-ng's 175 words per minute).
    static let rates = 0.5...2.5
    /// The query keys of `POST /v1/say` (read through `PlaybackParameters`); the route declares these.
    static let queryKeys = ["stream", "wait"]

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

    /// A text the server speaks of its own accord (the Sendspin pairing code), in the default voice.
    init(text: String, stream: String) {
        self.text = text
        self.voice = "en-us"
        self.rate = 1
        self.stream = stream
    }

    /// Parses the body; `queryStream` is a validated `?stream=` that names the stream instead of the
    /// body's (both given and different is a 400).
    init(json: Data, queryStream: String? = nil) throws(SpeechError) {
        let body: Body
        do {
            body = try JSONDecoder().decode(Body.self, from: json)
        } catch {
            throw SpeechError(.badBody, #"expected {"text": "...", "voice": "en-us", "rate": 1.0, "stream": "default"}"#)
        }
        let text = body.text ?? ""
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw SpeechError(.badBody, "'text' is empty: send the words to speak")
        }
        guard text.count <= Self.maximumCharacters else {
            throw SpeechError(.tooLarge, "'text' has \(text.count) characters; at most \(Self.maximumCharacters) are spoken per request")
        }
        let rate = body.rate ?? 1
        guard rate.isFinite, Self.rates.contains(rate) else { throw SpeechError(.badBody, "'rate' must be between 0.5 and 2.5") }
        let voice = body.voice ?? "en-us"
        guard !voice.isEmpty, voice.utf8.count <= 64, voice.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw SpeechError(.badBody, "'voice' must be a voice name from GET /v1/voices")
        }
        self.text = text
        self.voice = voice
        self.rate = rate
        var bodyStream: String?
        if let name = body.stream {
            do {
                bodyStream = try PlaybackParameters.validatedStreamName(name)
            } catch {
                throw SpeechError(.badParameter, error.message)
            }
        }
        if let queryStream, let bodyStream, queryStream != bodyStream {
            throw SpeechError.parameter("stream", "the query names '\(queryStream)' and the body '\(bodyStream)': give one")
        }
        self.stream = queryStream ?? bodyStream ?? "default"
    }

    /// espeak-ng's words per minute for `rate`.
    var wordsPerMinute: Int { Int((175 * rate).rounded()) }
}
