/// What clients may ask for on the capture and playback routes.
public enum ClientFormats {
    /// Capture rates a client may request.
    public static let captureRates = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000]
    /// Sample formats on the wire.
    public static let formats = ["s16le", "f32le", "mulaw", "alaw"]
    /// The one rate of G.711 (`mulaw`, `alaw`), which a query may leave out.
    public static let g711Rate = 8000
    /// Channel counts.
    public static let channels = 1...2
    /// Capture chunk lengths in milliseconds.
    public static let chunkMilliseconds = 10...200
}
