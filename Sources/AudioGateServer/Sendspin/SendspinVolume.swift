import Foundation

/// The player role's volume curve: volume 0-100 is perceived loudness, and the specification
/// asks for the amplitude `(volume / 100)^1.5` (volume 50 is about -9 dB).
public enum SendspinVolume {
    /// Linear gain for `volume` 0-100 (held to that range).
    public static func gain(volume: Int) -> Float {
        Float(pow(Double(min(max(volume, 0), 100)) / 100, 1.5))
    }
}
