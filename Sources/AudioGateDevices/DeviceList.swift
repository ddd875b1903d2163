import CALSA

/// One ALSA PCM as `snd_device_name_hint` describes it.
public struct DeviceInfo: Sendable, Equatable, Codable {
    /// The name to pass to `--device`.
    public var name: String
    /// ALSA's description, lines joined with " - ".
    public var description: String
    /// Usable for capture.
    public var capture: Bool
    /// Usable for playback.
    public var playback: Bool

    public init(name: String, description: String, capture: Bool, playback: Bool) {
        self.name = name
        self.description = description
        self.capture = capture
        self.playback = playback
    }
}

/// Lists the machine's PCMs.
public enum DeviceList {
    /// ALSA's PCM hints, followed by the built-in `loopback`.
    public static func all() -> [DeviceInfo] {
        audiogate_alsa_quiet()
        var devices: [DeviceInfo] = []
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        if snd_device_name_hint(-1, "pcm", &hints) >= 0, let hints {
            defer { snd_device_name_free_hint(hints) }
            var cursor = hints
            while let hint = cursor.pointee {
                defer { cursor += 1 }
                guard let name = take(snd_device_name_get_hint(hint, "NAME")) else { continue }
                let description = take(snd_device_name_get_hint(hint, "DESC")) ?? ""
                let direction = take(snd_device_name_get_hint(hint, "IOID"))
                devices.append(
                    DeviceInfo(
                        name: name,
                        description: description.split(separator: "\n").joined(separator: " - "),
                        capture: direction == nil || direction == "Input",
                        playback: direction == nil || direction == "Output"))
            }
        }
        devices.append(
            DeviceInfo(
                name: LoopbackCard.deviceName,
                description: "audiogate built-in software card: playback comes back as capture",
                capture: true, playback: true))
        return devices
    }

    /// Whether `name` is a device audiogate can ever open: `loopback`, `auto`, or a PCM that ALSA's
    /// configuration defines (a card that is merely absent now, such as `hw:CARD=USB`, still counts).
    ///
    /// A typo (`no_such_pcm`) is not defined anywhere and will never open, so the caller can refuse
    /// it at once instead of retrying forever.
    public static func isKnown(_ name: String) -> Bool {
        if name == LoopbackCard.deviceName || name == "auto" { return true }
        audiogate_alsa_quiet()
        // Without a readable configuration ALSA cannot tell; the open will then say what is wrong.
        return audiogate_pcm_defined(name) != 0
    }

    private static func take(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
        guard let pointer else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}
