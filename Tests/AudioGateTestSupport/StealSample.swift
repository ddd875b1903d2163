/// One reading of the machine-wide CPU time counters from /proc/stat (in clock ticks).
public struct StealSample: Sendable, Equatable {
    /// Ticks stolen by the hypervisor for other guests.
    public var steal: UInt64
    /// All ticks (user + nice + system + idle + iowait + irq + softirq + steal).
    public var total: UInt64

    /// Creates a sample.
    public init(steal: UInt64, total: UInt64) {
        self.steal = steal
        self.total = total
    }

    /// Share of CPU time stolen between `earlier` and this sample, in percent (0 when unknown).
    public func percent(since earlier: StealSample) -> Double {
        guard total > earlier.total, steal >= earlier.steal else { return 0 }
        return 100 * Double(steal - earlier.steal) / Double(total - earlier.total)
    }
}
