import AudioGateCore
import Testing

@Suite("Channel mixer")
struct ChannelMixerTests {
    func remix(_ source: [Float], from: Int, to: Int, capacity: Int = 64) -> [Float] {
        var output = [Float](repeating: .nan, count: capacity)
        let frames = source.withUnsafeBufferPointer { src in
            output.withUnsafeMutableBufferPointer { ChannelMixer.remix(src, from: from, to: to, into: $0) }
        }
        return Array(output.prefix(frames * to))
    }

    @Test func remixLayouts() {
        #expect(remix([0.1, 0.2, 0.3], from: 1, to: 1) == [0.1, 0.2, 0.3])
        #expect(remix([0.1, 0.2, 0.3, 0.4], from: 2, to: 2) == [0.1, 0.2, 0.3, 0.4])
        #expect(remix([0.1, -0.2], from: 1, to: 2) == [0.1, 0.1, -0.2, -0.2])
        #expect(remix([1, 0, 0.5, -0.5, 0.25, 0.75], from: 2, to: 1) == [0.5, 0, 0.5])
        // A trailing half frame is not a frame.
        #expect(remix([1, 1, 1], from: 2, to: 1) == [1])
    }

    @Test func remixRespectsDestinationSize() {
        #expect(remix([0.1, 0.2, 0.3], from: 1, to: 2, capacity: 5) == [0.1, 0.1, 0.2, 0.2])
        #expect(remix([0.1], from: 0, to: 2).isEmpty)
    }

    @Test func interleaveAndDeinterleave() {
        let left: [Float] = [1, 2, 3], right: [Float] = [-1, -2, -3, -4]
        var interleaved = [Float](repeating: 0, count: 8)
        let frames = left.withUnsafeBufferPointer { l in
            right.withUnsafeBufferPointer { r in
                interleaved.withUnsafeMutableBufferPointer { ChannelMixer.interleave([l, r], into: $0) }
            }
        }
        #expect(frames == 3)
        #expect(interleaved.prefix(6) == [1, -1, 2, -2, 3, -3])

        var a = [Float](repeating: 0, count: 3), b = [Float](repeating: 0, count: 3)
        let split = interleaved.withUnsafeBufferPointer { src in
            a.withUnsafeMutableBufferPointer { pa in
                b.withUnsafeMutableBufferPointer { pb in ChannelMixer.deinterleave(UnsafeBufferPointer(rebasing: src[0..<6]), into: [pa, pb]) }
            }
        }
        #expect(split == 3 && a == left && b == Array(right.prefix(3)))
    }

    @Test func downmixAndPick() {
        let stereo: [Float] = [1, 0, -1, -1, 0.5, 0.25]
        var mono = [Float](repeating: 0, count: 3)
        let frames = stereo.withUnsafeBufferPointer { src in
            mono.withUnsafeMutableBufferPointer { ChannelMixer.downmixToMono(src, channels: 2, into: $0) }
        }
        #expect(frames == 3 && mono == [0.5, -1, 0.375])

        let three: [Float] = [0.3, 0.6, 0.9, -0.3, -0.6, -0.9]
        let downmixed = three.withUnsafeBufferPointer { src in
            mono.withUnsafeMutableBufferPointer { ChannelMixer.downmixToMono(src, channels: 3, into: $0) }
        }
        #expect(downmixed == 2 && abs(mono[0] - 0.6) < 1e-6 && abs(mono[1] + 0.6) < 1e-6)

        let picked = stereo.withUnsafeBufferPointer { src in
            mono.withUnsafeMutableBufferPointer { ChannelMixer.pickChannel(src, channels: 2, channel: 1, into: $0) }
        }
        #expect(picked == 3 && mono == [0, -1, 0.25])
        let invalid = stereo.withUnsafeBufferPointer { src in
            mono.withUnsafeMutableBufferPointer { ChannelMixer.pickChannel(src, channels: 2, channel: 2, into: $0) }
        }
        #expect(invalid == 0)
    }
}
