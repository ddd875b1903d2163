import Foundation

/// One measured operation: `body` processes `audioSeconds` of audio (or `items` samples) per call.
struct BenchmarkCase {
    let name: String
    /// Seconds of audio one call handles (for the x-realtime figure), 0 when not audio-timed.
    let audioSeconds: Double
    /// Samples one call handles (for the samples/s figure).
    let samples: Int
    let body: () -> Void

    struct Result: Encodable {
        var name: String
        var runs: Int
        var medianWallMilliseconds: Double
        var medianCPUMilliseconds: Double
        /// Seconds of audio per second of thread CPU: how many real-time streams one core carries.
        var realtimeFactorPerCore: Double?
        var megasamplesPerSecond: Double
        var stealPercent: Double
    }

    /// Runs `body` `repetitions` times per run after a warm-up, `runs` runs, and reports medians.
    func measure(runs: Int = 9, repetitions: Int) -> Result {
        body()
        var walls: [Double] = []
        var cpus: [Double] = []
        let stealStart = BenchmarkClock.stealJiffies()
        for _ in 0..<runs {
            let wall = BenchmarkClock.wallNanoseconds()
            let cpu = BenchmarkClock.threadCPUNanoseconds()
            for _ in 0..<repetitions { body() }
            cpus.append(Double(BenchmarkClock.threadCPUNanoseconds() - cpu) / 1e6 / Double(repetitions))
            walls.append(Double(BenchmarkClock.wallNanoseconds() - wall) / 1e6 / Double(repetitions))
        }
        let stealEnd = BenchmarkClock.stealJiffies()
        let totalDelta = Double(stealEnd.total - stealStart.total)
        let steal = totalDelta > 0 ? 100 * Double(stealEnd.steal - stealStart.steal) / totalDelta : 0
        let cpu = median(cpus)
        return Result(
            name: name, runs: runs, medianWallMilliseconds: median(walls), medianCPUMilliseconds: cpu,
            realtimeFactorPerCore: audioSeconds > 0 ? audioSeconds * 1000 / cpu : nil,
            megasamplesPerSecond: Double(samples) / (cpu / 1000) / 1e6,
            stealPercent: steal)
    }

    private func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}
