/// A PCM sample encoding, named as in the API (`?format=`) and, where one exists, after its ALSA twin.
public enum SampleFormat: String, Sendable, Hashable, CaseIterable, Codable {
    /// Unsigned 8-bit, offset binary (128 is silence).
    case u8
    /// Signed 16-bit little-endian.
    case s16le
    /// Signed 24-bit in the low 3 bytes of a 4-byte little-endian container (ALSA S24_LE).
    case s24le
    /// Signed 24-bit packed in 3 bytes little-endian (WAV 24-bit, ALSA S24_3LE).
    case s24le3
    /// Signed 32-bit little-endian.
    case s32le
    /// IEEE 754 32-bit float little-endian, nominal range [-1, 1].
    case f32le
    /// ITU-T G.711 μ-law, one byte a sample (8 kHz telephony audio).
    case mulaw
    /// ITU-T G.711 A-law, one byte a sample.
    case alaw

    /// Bytes one sample of this format occupies.
    public var bytesPerSample: Int {
        switch self {
        case .u8, .mulaw, .alaw: 1
        case .s16le: 2
        case .s24le3: 3
        case .s24le, .s32le, .f32le: 4
        }
    }

    /// Significant bits per sample (24 for both 24-bit layouts).
    public var bitsPerSample: Int {
        switch self {
        case .u8, .mulaw, .alaw: 8
        case .s16le: 16
        case .s24le, .s24le3: 24
        case .s32le, .f32le: 32
        }
    }

    /// Whether samples are IEEE floats rather than integers.
    public var isFloat: Bool { self == .f32le }

    /// Whether samples are G.711 companded codes (μ-law or A-law) rather than linear PCM.
    public var isG711: Bool { self == .mulaw || self == .alaw }
}
