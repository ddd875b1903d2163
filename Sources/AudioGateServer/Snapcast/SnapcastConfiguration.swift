import Foundation

/// The Snapcast client (`--snapcast-*`); off unless given a server.
public struct SnapcastConfiguration: Sendable, Equatable {
    /// snapserver's stream port.
    public static let defaultPort = 1704

    /// The snapserver's host (nil: the client is off).
    public var host: String?
    /// Its stream port.
    public var port = SnapcastConfiguration.defaultPort
    /// The name shown in the server's client list.
    public var name = SnapcastConfiguration.defaultName
    /// The client id the server keeps this client's settings under.
    public var id = SnapcastConfiguration.defaultID
    /// The playback stream the music plays on.
    public var stream = "snapcast"
    /// Extra output latency in milliseconds, taken off the server's buffer as snapclient's `--latency` is.
    public var latencyMilliseconds = 0

    public init() {}

    /// Whether a server is configured.
    public var isEnabled: Bool { host != nil }

    /// `HOST[:PORT]` as the flag takes it (IPv6 literals in brackets: `[::1]:1704`); nil when it does not parse.
    public static func parseServer(_ text: String) -> (host: String, port: Int)? {
        var host = Substring(text)
        var port = defaultPort
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let value = Int(rest.dropFirst()) else { return nil }
                port = value
            }
        } else if let colon = host.lastIndex(of: ":"), host.firstIndex(of: ":") == colon {
            guard let value = Int(host[host.index(after: colon)...]) else { return nil }
            port = value
            host = host[..<colon]
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        return (String(host), port)
    }

    /// Why the settings cannot work, or nil when they can.
    public func problem() -> String? {
        guard isEnabled else { return nil }
        do throws(PlaybackError) {
            _ = try PlaybackParameters.validatedStreamName(stream)
        } catch {
            return "--snapcast-stream must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' and '-'"
        }
        guard (0...10_000).contains(latencyMilliseconds) else { return "--snapcast-latency-ms must be 0-10000" }
        guard (1...128).contains(name.utf8.count) else { return "--snapcast-name must be 1-128 bytes" }
        guard (1...128).contains(id.utf8.count) else { return "--snapcast-id must be 1-128 bytes" }
        return nil
    }

    /// The host name, as snapclient reports its own.
    public static var defaultName: String {
        ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "audiogate"
    }

    /// An id derived from /etc/machine-id (stable across restarts, not the machine id itself), else
    /// from the host name.
    public static var defaultID: String {
        let machine = (try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let seed = (machine?.isEmpty == false ? machine! : defaultName) + ":audiogate-snapcast"
        // FNV-1a: a stable hash (Swift's Hasher is seeded per process).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in seed.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "audiogate-" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}
