/// The device loop's countdown from the moment nobody needs the device.
struct IdleCountdown {
    private var since: UInt64?

    /// Whether the device has gone unused for the whole idle period at `now`.
    mutating func expired(inUse: Bool, demand: DeviceDemand, now: UInt64) -> Bool {
        guard demand.stopsWhenIdle else { return false }
        if demand.wanted(inUse: inUse, at: now) {
            since = nil
            return false
        }
        guard let since else {
            self.since = now
            return false
        }
        return now &- since >= demand.idleNanoseconds
    }

    mutating func reset() {
        since = nil
    }
}
