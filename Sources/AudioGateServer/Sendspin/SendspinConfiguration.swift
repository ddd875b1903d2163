import Foundation

/// A codec the player can be sent.
public enum SendspinCodec: String, Sendable, CaseIterable {
    case pcm, flac, opus
}

/// The Sendspin player (`--sendspin-*`); off unless given a server.
public struct SendspinConfiguration: Sendable, Equatable {
    /// The server's WebSocket URL (nil: the player is off).
    public var url: String?
    /// The name the server shows for this player.
    public var name = SnapcastConfiguration.defaultName
    /// The playback stream the music plays on.
    public var stream = "sendspin"
    /// Delay after the audio port (external amplifiers), taken off each chunk's time; 0-5000.
    public var outputDelayMilliseconds = 0
    /// The codecs offered, most wanted first.
    public var codecs: [SendspinCodec] = [.flac, .pcm, .opus]
    /// The Noise suite asked for in `client/init`.
    public var suite = NoiseCipherSuite.chaChaPoly
    /// Where the player's key is kept (`--data-dir`).
    public var dataDirectory = ServerConfiguration.defaultDataDirectory

    public init() {}

    /// Whether a server is configured.
    public var isEnabled: Bool { url != nil }

    /// Largest `output_delay_ms` the specification allows.
    public static let maximumOutputDelayMilliseconds = 5000

    /// Whether `text` is a URL the player can dial: `ws://HOST[:PORT]/PATH` (`wss` is not spoken).
    public static func isValidURL(_ text: String) -> Bool {
        guard let components = URLComponents(string: text), components.scheme == "ws", let host = components.host,
            !host.isEmpty, components.user == nil, components.password == nil, components.fragment == nil
        else { return false }
        if let port = components.port, !(1...65535).contains(port) { return false }
        return true
    }

    /// Why the settings cannot work, or nil when they can.
    public func problem() -> String? {
        guard let url else { return nil }
        guard Self.isValidURL(url) else { return "--sendspin-server must be ws://HOST[:PORT]/PATH, not '\(url.prefix(200))'" }
        do {
            _ = try PlaybackParameters.validatedStreamName(stream)
        } catch {
            return "--sendspin-stream must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' and '-'"
        }
        guard (0...Self.maximumOutputDelayMilliseconds).contains(outputDelayMilliseconds) else {
            return "--sendspin-output-delay-ms must be 0-5000"
        }
        guard (1...128).contains(name.utf8.count) else { return "--sendspin-name must be 1-128 bytes" }
        guard !codecs.isEmpty, Set(codecs).count == codecs.count, codecs.contains(.pcm) || codecs.contains(.flac) else {
            return "--sendspin-codecs must list pcm or flac (and may add opus), each once"
        }
        return nil
    }

    /// `pcm,flac,opus` as the flag takes it; nil when a name is not a codec.
    public static func parseCodecs(_ text: String) -> [SendspinCodec]? {
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let codecs = names.compactMap(SendspinCodec.init(rawValue:))
        return codecs.count == names.count ? codecs : nil
    }
}
