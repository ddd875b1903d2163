/// Whether a device loop is moving audio.
public enum DeviceState: String, Sendable, Codable {
    /// The device is open and audio flows.
    case running
    /// The device failed; reopening with backoff.
    case recovering
    /// The device could not be opened for a while; still retrying, less often.
    case unavailable
    /// Nobody used the device for the idle period: it is stopped and starts again on demand.
    case idle
}
