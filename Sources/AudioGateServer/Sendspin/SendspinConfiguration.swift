import Foundation

/// A codec the player can be sent.
public enum SendspinCodec: String, Sendable, CaseIterable {
    case pcm, flac, opus
}

/// The Sendspin player (`--sendspin-*`); off unless given a server to dial or a port to be dialed on.
public struct SendspinConfiguration: Sendable, Equatable {
    /// The server's WebSocket URL, when the player dials it.
    public var url: String?
    /// The address servers dial the player on (`--sendspin-port`), when it waits for them.
    public var listen: ListenAddress?
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
    /// The static pairing code (8 digits) a server's operator types in while a pairing window is
    /// open; nil offers only the Pairing PSK method.
    public var staticPairingCode: String?
    /// Where the player's key is kept (`--data-dir`).
    public var dataDirectory = ServerConfiguration.defaultDataDirectory

    public init() {}

    /// An address `--sendspin-port` listens on; the host is the API's `--host` unless given.
    public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
        public var host: String?
        public var port: Int

        public init(host: String? = nil, port: Int) {
            self.host = host
            self.port = port
        }

        /// `PORT` or `HOST:PORT` (`[V6]:PORT` for an IPv6 address); nil when it is neither.
        public init?(_ text: String) {
            var host: Substring?
            var port = Substring(text)
            if let colon = text.lastIndex(of: ":") {
                host = text[..<colon]
                port = text[text.index(after: colon)...]
                if let bracketed = host, bracketed.hasPrefix("["), bracketed.hasSuffix("]") {
                    host = bracketed.dropFirst().dropLast()
                }
                guard let host, !host.isEmpty, !host.contains("/") else { return nil }
            }
            guard let number = Int(port) else { return nil }
            self.init(host: host.map(String.init), port: number)
        }

        public var description: String {
            guard let host else { return "\(port)" }
            return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        }
    }

    /// The port the specification recommends for players that servers dial.
    public static let recommendedListenPort = 8928

    /// Whether the player is on: it dials a server or waits for servers to dial it.
    public var isEnabled: Bool { url != nil || listen != nil }

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
        guard isEnabled else { return nil }
        if url != nil, listen != nil {
            // The specification: a player advertised for servers to dial must not dial one itself.
            return "--sendspin-server and --sendspin-port are two ways to meet a server: give one"
        }
        if let url, !Self.isValidURL(url) {
            return "--sendspin-server must be ws://HOST[:PORT]/PATH, not '\(url.prefix(200))'"
        }
        if let listen, !(1...65535).contains(listen.port) {
            return "--sendspin-port must be PORT or HOST:PORT with a port of 1-65535"
        }
        do {
            _ = try PlaybackParameters.validatedStreamName(stream)
        } catch {
            return "--sendspin-stream must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' and '-'"
        }
        guard (0...Self.maximumOutputDelayMilliseconds).contains(outputDelayMilliseconds) else {
            return "--sendspin-output-delay-ms must be 0-5000"
        }
        guard (1...128).contains(name.utf8.count) else { return "--sendspin-name must be 1-128 bytes" }
        if let code = staticPairingCode, !SendspinPairingCode.isValid(code) {
            return "--sendspin-pairing-code must be exactly 8 digits"
        }
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
