import Foundation

/// Hypervisor steal time: on a shared VM, real-time tests can fail because the guest was not running.
public enum Steal {
    /// Reads the aggregate `cpu` line of /proc/stat (zeros where it is unavailable).
    public static func sample() -> StealSample {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else {
            return StealSample(steal: 0, total: 0)
        }
        return parse(text)
    }

    /// Parses /proc/stat text (only the first `cpu ` line is used).
    public static func parse(_ text: String) -> StealSample {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else {
            return StealSample(steal: 0, total: 0)
        }
        let fields = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
        // guest and guest_nice (fields 9, 10) are already counted in user and nice.
        let counted = fields.prefix(8)
        let total = counted.reduce(0, &+)
        let steal = fields.count > 7 ? fields[7] : 0
        return StealSample(steal: steal, total: total)
    }
}
