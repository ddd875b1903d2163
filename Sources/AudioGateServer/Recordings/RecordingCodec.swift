import AudioGateCore

/// How a recording's segments are stored: WAV (PCM as captured), FLAC (lossless) or Ogg Opus (lossy).
public enum RecordingCodec: String, Sendable, Codable, CaseIterable {
    case wav
    case flac
    case opus

    /// Sample rates Opus encodes natively; a recording in Opus takes one of them.
    public static let opusRates = [8000, 12000, 16000, 24000, 48000]
    /// Default Opus bitrate in bits per second (speech stays clear; a day of mono is about 260 MB).
    public static let defaultOpusBitrate = 24000
    /// Opus bitrates a recording may ask for.
    public static let opusBitrates = 6000...510_000
    /// Sample formats FLAC segments are written in (16 bits: the encoder core feeds FLAC 16-bit samples).
    public static let flacFormats: [SampleFormat] = [.s16le]

    /// Ending of the segment files and their download URLs.
    public var fileExtension: String {
        switch self {
        case .wav: "wav"
        case .flac: "flac"
        case .opus: "opus"
        }
    }

    /// Content-Type of a segment download.
    public var contentType: String {
        switch self {
        case .wav: "audio/wav"
        case .flac: "audio/flac"
        case .opus: "audio/ogg"
        }
    }
}
