import Testing

@testable import AudioGateCore

@Suite("sample math")
struct SampleMathTests {
    @Test("accumulating adds every sample, the vector part and the tail alike", arguments: [0, 1, 7, 8, 9, 960, 963])
    func accumulate(count: Int) {
        let source = (0..<count).map { Float($0) * 0.25 - 3 }
        var output = (0..<count).map { Float($0 % 5) }
        let expected = zip(source, output).map { $0 + $1 }
        source.withUnsafeBufferPointer { from in
            output.withUnsafeMutableBufferPointer { to in
                guard let source = from.baseAddress, let target = to.baseAddress else { return }
                SampleMath.accumulate(source, into: target, count: count)
            }
        }
        #expect(output == expected)
    }

    @Test("a sample over the limit is found wherever it sits and whatever its sign")
    func exceeds() {
        for count in [1, 8, 13, 960] {
            let quiet = [Float](repeating: 0.5, count: count)
            #expect(!quiet.withUnsafeBufferPointer { SampleMath.exceeds($0.baseAddress!, count: count, limit: 0.9) })
            for position in Set([0, count / 2, count - 1]) {
                for sign: Float in [1, -1] {
                    var samples = quiet
                    samples[position] = 0.95 * sign
                    let over = samples.withUnsafeBufferPointer { SampleMath.exceeds($0.baseAddress!, count: count, limit: 0.9) }
                    #expect(over, "count \(count), at \(position), sign \(sign)")
                }
            }
        }
        #expect(![Float(2)].withUnsafeBufferPointer { SampleMath.exceeds($0.baseAddress!, count: 0, limit: 0.9) })
    }
}
