import AudioGateCore
import Logging

/// Opens a device by the name the user gave: an ALSA PCM name or the built-in `loopback`.
public struct DeviceOpener: Sendable {
    /// The name shown in status and logs.
    public let name: String
    private let openStream: @Sendable (PCMDirection, PCMRequest) throws(ALSAError) -> any PCMStream

    /// An opener for the ALSA PCM `name`.
    public static func alsa(_ name: String) -> DeviceOpener {
        DeviceOpener(name: name) { direction, request throws(ALSAError) in
            try PCMHandle(name: name, direction: direction, request: request)
        }
    }

    /// An opener for the built-in software card.
    public static func loopback(_ card: LoopbackCard) -> DeviceOpener {
        DeviceOpener(name: LoopbackCard.deviceName) { direction, request throws(ALSAError) in
            LoopbackStream(card: card, direction: direction, request: request)
        }
    }

    public init(
        name: String,
        open: @escaping @Sendable (PCMDirection, PCMRequest) throws(ALSAError) -> any PCMStream
    ) {
        self.name = name
        self.openStream = open
    }

    /// Opens a fresh stream.
    public func open(_ direction: PCMDirection, request: PCMRequest) throws(ALSAError) -> any PCMStream {
        try openStream(direction, request)
    }

    /// Resolves a device name: `loopback`, `auto` (ALSA `default`, else loopback with a warning), or ALSA.
    public static func resolve(
        _ name: String, direction: PCMDirection, request: PCMRequest, card: LoopbackCard, logger: Logger
    ) -> DeviceOpener {
        switch name {
        case LoopbackCard.deviceName:
            return .loopback(card)
        case "auto":
            do {
                _ = try PCMHandle(name: "default", direction: direction, request: request)
                return .alsa("default")
            } catch {
                logger.warning(
                    """
                    NO SOUND CARD: ALSA 'default' \(direction.rawValue) cannot be opened (\(error)). \
                    Using the built-in 'loopback' device: what is played comes back as capture. \
                    Pass --device NAME to choose a card (see 'audiogate devices').
                    """)
                return .loopback(card)
            }
        default:
            return .alsa(name)
        }
    }
}
