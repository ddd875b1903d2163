import Synchronization

/// The output volume shared by the API (writes) and the playback thread (reads, lock-free).
public final class VolumeControl: Sendable {
    private let gainBits = Atomic<UInt32>(Float(1).bitPattern)
    private let mutedFlag = Atomic<Bool>(false)

    public init() {}

    /// Current settings.
    public var settings: VolumeSettings {
        VolumeSettings(
            playback: Double(Float(bitPattern: gainBits.load(ordering: .relaxed))), muted: mutedFlag.load(ordering: .relaxed))
    }

    /// Replaces the settings (the caller validated the range).
    public func apply(_ settings: VolumeSettings) {
        gainBits.store(Float(min(max(settings.playback, 0), 1)).bitPattern, ordering: .relaxed)
        mutedFlag.store(settings.muted, ordering: .relaxed)
    }

    /// The gain the mixer ramps toward (0 when muted).
    var targetGain: Float {
        mutedFlag.load(ordering: .relaxed) ? 0 : Float(bitPattern: gainBits.load(ordering: .relaxed))
    }
}
