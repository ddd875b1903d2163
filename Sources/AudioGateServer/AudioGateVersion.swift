/// The server's version, reported by `--version` and `/v1/info`.
public enum AudioGateVersion {
    public static let current = "0.1.0"
}
