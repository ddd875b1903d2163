import Foundation

/// Reads `AUDIOGATE_*` variables, the container-friendly twin of every serve flag.
enum Environment {
    static func string(_ flag: String) -> String? {
        let key = "AUDIOGATE_" + flag.uppercased().replacingOccurrences(of: "-", with: "_")
        guard let value = ProcessInfo.processInfo.environment[key], !value.isEmpty else { return nil }
        return value
    }

    static func int(_ flag: String) -> Int? {
        string(flag).flatMap { Int($0) }
    }

    static func double(_ flag: String) -> Double? {
        string(flag).flatMap { Double($0) }
    }

    /// A boolean variable: `true`, `1` or `yes`.
    static func bool(_ flag: String) -> Bool {
        ["true", "1", "yes"].contains(string(flag)?.lowercased() ?? "")
    }

    static func list(_ flag: String) -> [String] {
        string(flag)?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } ?? []
    }
}
