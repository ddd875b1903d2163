/// What `Spectrum.analyze` found: the tone and the strongest energy outside it.
public struct SpectrumReport: Sendable, Equatable {
    /// Frequency of the tone's peak bin, in Hz.
    public var toneFrequency: Double
    /// Tone peak level in dB relative to a full-scale sine (window gain removed).
    public var toneLevelDB: Double
    /// Highest bin outside the tone region, in dB relative to the tone's peak bin (e.g. -120).
    public var worstSpurDB: Double
    /// Frequency of that bin, in Hz.
    public var worstSpurFrequency: Double
    /// All energy outside the tone region relative to the tone's energy, in dB (a THD+N-like figure).
    public var noiseDB: Double
    /// FFT length used.
    public var fftLength: Int
}
