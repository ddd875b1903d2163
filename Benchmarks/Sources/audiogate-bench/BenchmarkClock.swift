import Foundation

/// Wall and thread-CPU time, and the machine's steal time, for one measured run.
struct BenchmarkClock {
    static func wallNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    static func threadCPUNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// (steal, total) jiffies from the `cpu` line of /proc/stat.
    static func stealJiffies() -> (steal: UInt64, total: UInt64) {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
        else { return (0, 0) }
        let fields = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
        let steal = fields.count > 7 ? fields[7] : 0
        // guest and guest_nice are already inside user and nice.
        let total = fields.prefix(8).reduce(0, +)
        return (steal, total)
    }
}
