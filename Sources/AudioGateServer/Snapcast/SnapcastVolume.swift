import Foundation

/// snapclient's software mixer (0.26's default `--mixer software`, mode `exp`, base 10): the gain
/// for a server volume, so a group of players at one volume sounds alike.
public enum SnapcastVolume {
    /// The exponent's base snapclient uses when `--mixer software` has no parameter.
    public static let base = 10.0

    /// Linear gain for `volume` 0-100: (base^v - 1) / (base - 1) with v = volume / 100.
    public static func gain(volume: Int) -> Float {
        let v = Double(min(max(volume, 0), 100)) / 100
        return Float((pow(base, v) - 1) / (base - 1))
    }
}
