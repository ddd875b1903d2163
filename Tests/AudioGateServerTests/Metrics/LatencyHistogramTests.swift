import Testing

@testable import AudioGateServer

@Suite("latency histogram")
struct LatencyHistogramTests {
    @Test("the Prometheus histogram counts each latency in every bucket at or above it, with exact sum and count")
    func prometheusExposition() {
        let histogram = LatencyHistogram()
        histogram.record(nanoseconds: 300_000)
        histogram.record(nanoseconds: [900_000, 1_000_000, 4_000_000, 70_000_000_000])
        var buffer: [UInt8] = []
        histogram.emitPrometheus(
            name: "delay_seconds", help: "a delay", bounds: [.microseconds(500), .milliseconds(1), .milliseconds(5), .seconds(1)],
            into: &buffer)
        let lines = String(decoding: buffer, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines == [
            "# HELP delay_seconds a delay",
            "# TYPE delay_seconds histogram",
            #"delay_seconds_bucket{le="0.0005"} 1"#,
            #"delay_seconds_bucket{le="0.001"} 3"#,
            #"delay_seconds_bucket{le="0.005"} 4"#,
            #"delay_seconds_bucket{le="1.0"} 4"#,
            #"delay_seconds_bucket{le="+Inf"} 5"#,
            "delay_seconds_sum 70.0062",
            "delay_seconds_count 5",
        ])
        #expect(histogram.summary.count == 5)
    }

    @Test("an empty histogram exposes zero buckets")
    func empty() {
        var buffer: [UInt8] = []
        LatencyHistogram().emitPrometheus(name: "d", help: "h", bounds: [.milliseconds(1)], into: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self).contains(#"d_bucket{le="0.001"} 0"#))
        #expect(String(decoding: buffer, as: UTF8.self).hasSuffix("d_sum 0.0\nd_count 0\n"))
    }
}
