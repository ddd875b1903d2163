/// An installed espeak-ng voice, as `GET /v1/voices` lists it.
public struct SpeechVoice: Encodable, Sendable, Equatable {
    /// The name to pass as `voice` (the voice file's identifier, e.g. `gmw/en-US` is `en-us`).
    public var name: String
    /// The voice's display name.
    public var displayName: String
    /// Languages it speaks, most preferred first.
    public var languages: [String]
    /// `male`, `female` or `unknown`.
    public var gender: String
}
