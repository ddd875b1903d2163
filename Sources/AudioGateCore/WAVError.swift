/// Why bytes could not be read as a supported WAV file.
public typealias WAVError = CodedError<WAVErrorCode>

/// Machine-readable reason; raw values are the snake_case API error codes.
public enum WAVErrorCode: String, ErrorCode, CaseIterable {
    /// Not enough bytes yet to reach the data chunk: call again with more.
    case truncated
    /// Not a RIFF/WAVE file at all.
    case notWAV = "not_wav"
    /// A WAV file, but its header contradicts itself or is absurd.
    case malformed
    /// A compressed or otherwise unsupported encoding (ADPCM, mu-law, MP3, ...).
    case unsupportedEncoding = "unsupported_encoding"
    /// Channel count other than 1 or 2.
    case unsupportedChannels = "unsupported_channels"
    /// Sample rate outside 8000...192000.
    case unsupportedRate = "unsupported_rate"
    /// Bit depth other than 8/16/24/32 integer or 32 float.
    case unsupportedBitDepth = "unsupported_bit_depth"
}
