/// The capture processing a client asks for (`aec`, `ns`, `agc`, `vad`); clients asking for the same
/// processing (and format) share one processor.
public struct VoiceProcessing: Sendable, Hashable, Codable {
    /// Cancel the echo of what audiogate plays.
    public var echoCancellation = false
    /// Suppress stationary noise.
    public var noiseSuppression = false
    /// Automatic (digital) gain.
    public var gainControl = false
    /// Voice activity events.
    public var voiceDetection = false

    /// No processing (the default).
    public init() {}

    /// Sets each option by name.
    public init(aec: Bool = false, ns: Bool = false, agc: Bool = false, vad: Bool = false) {
        echoCancellation = aec
        noiseSuppression = ns
        gainControl = agc
        voiceDetection = vad
    }

    /// Whether any processing runs (else the audio goes straight from the resampler to the clients).
    public var isEnabled: Bool { echoCancellation || noiseSuppression || gainControl || voiceDetection }

    /// Rates the processor runs at natively; other rates would need a second resampler per setting.
    public static let rates: Set<Int> = [8000, 16000, 32000, 48000]

    /// The query parameter names, in the order they are documented.
    public static let parameterNames = ["aec", "ns", "agc", "vad"]

    enum CodingKeys: String, CodingKey {
        case echoCancellation = "aec", noiseSuppression = "ns", gainControl = "agc", voiceDetection = "vad"
    }

    /// Compact JSON: `{"aec":true,"ns":false,"agc":false,"vad":true}`.
    public func json() -> String {
        "{\"aec\":\(echoCancellation),\"ns\":\(noiseSuppression),\"agc\":\(gainControl),\"vad\":\(voiceDetection)}"
    }

    /// A short label for logs and metrics, e.g. `aec+ns`.
    public var label: String {
        let parts = [
            echoCancellation ? "aec" : nil, noiseSuppression ? "ns" : nil, gainControl ? "agc" : nil,
            voiceDetection ? "vad" : nil,
        ].compactMap { $0 }
        return parts.isEmpty ? "none" : parts.joined(separator: "+")
    }
}
