import AudioGateCore
import AudioGateTestSupport
import Testing

@Suite("Ring buffer")
struct RingBufferTests {
    func write(_ ring: RingBuffer<Int32>, _ values: [Int32]) -> Int {
        values.withUnsafeBufferPointer { ring.write($0) }
    }

    func overwrite(_ ring: RingBuffer<Int32>, _ values: [Int32]) -> Int {
        values.withUnsafeBufferPointer { ring.writeOverwritingOldest($0) }
    }

    func read(_ ring: RingBuffer<Int32>, _ count: Int) -> [Int32] {
        var output = [Int32](repeating: -1, count: count)
        let n = output.withUnsafeMutableBufferPointer { ring.read(into: $0) }
        return Array(output.prefix(n))
    }

    @Test func writeWhatFitsAndReadBack() {
        let ring = RingBuffer<Int32>(capacity: 5)
        #expect(ring.capacity == 5 && ring.isEmpty && ring.freeSpace == 5)
        #expect(write(ring, [1, 2, 3]) == 3)
        #expect(write(ring, [4, 5, 6, 7]) == 2)
        #expect(ring.isFull && ring.count == 5 && ring.freeSpace == 0)
        #expect(read(ring, 2) == [1, 2])
        #expect(write(ring, [8, 9, 10]) == 2)
        #expect(read(ring, 10) == [3, 4, 5, 8, 9])
        #expect(ring.isEmpty)
    }

    @Test func peekDiscardAndRemoveAll() {
        let ring = RingBuffer<Int32>(capacity: 4)
        _ = write(ring, [1, 2, 3])
        _ = read(ring, 2)
        _ = write(ring, [4, 5, 6])  // wraps: storage now [5, 6, 3, 4]
        var peeked = [Int32](repeating: 0, count: 3)
        #expect(peeked.withUnsafeMutableBufferPointer { ring.peek(into: $0) } == 3)
        #expect(peeked == [3, 4, 5] && ring.count == 4)
        let (first, second) = ring.readableRegions()
        #expect(Array(first) + Array(second) == [3, 4, 5, 6])
        #expect(ring.discard(3) == 3)
        #expect(read(ring, 4) == [6])
        #expect(ring.discard(10) == 0)
        _ = write(ring, [7, 8])
        ring.removeAll()
        #expect(ring.isEmpty && ring.freeSpace == 4 && read(ring, 4).isEmpty)
    }

    @Test func dropOldest() {
        let ring = RingBuffer<Int32>(capacity: 4)
        #expect(overwrite(ring, [1, 2, 3]) == 0)
        #expect(overwrite(ring, [4, 5, 6]) == 2)
        #expect(read(ring, 4) == [3, 4, 5, 6])
        _ = write(ring, [1, 2])
        // Larger than the capacity: everything old plus the head of the input is lost.
        #expect(overwrite(ring, [10, 11, 12, 13, 14, 15]) == 4)
        #expect(read(ring, 8) == [12, 13, 14, 15])
        #expect(overwrite(ring, []) == 0)
    }

    @Test func writeRepeating() {
        let ring = RingBuffer<Int32>(capacity: 3)
        _ = write(ring, [1, 2])
        _ = read(ring, 1)
        #expect(ring.write(repeating: 0, count: 5) == 2)
        #expect(read(ring, 3) == [2, 0, 0])
    }

    @Test("random operations match a reference FIFO across many wrap-arounds", arguments: [1, 2, 7, 64])
    func matchesReference(capacity: Int) {
        var generator = SeededGenerator(seed: UInt64(capacity))
        let ring = RingBuffer<Int32>(capacity: capacity)
        var reference: [Int32] = []
        var next: Int32 = 0
        for _ in 0..<5000 {
            let size = Int.random(in: 0...(capacity + 3), using: &generator)
            let values = (0..<size).map { _ -> Int32 in next += 1; return next }
            switch Int.random(in: 0..<5, using: &generator) {
            case 0:
                let written = write(ring, values)
                #expect(written == min(size, capacity - reference.count))
                reference += values.prefix(written)
            case 1:
                let dropped = overwrite(ring, values)
                reference += values
                let excess = max(0, reference.count - capacity)
                #expect(dropped == excess)
                reference.removeFirst(excess)
            case 2:
                let removed = ring.discard(size)
                #expect(removed == min(size, reference.count))
                reference.removeFirst(removed)
            default:
                let got = read(ring, size)
                #expect(got == Array(reference.prefix(size)))
                reference.removeFirst(got.count)
            }
            #expect(ring.count == reference.count)
            #expect(ring.freeSpace == capacity - reference.count)
        }
    }

    @Test func floatElements() {
        let ring = RingBuffer<Float>(capacity: 3)
        let written = [Float](arrayLiteral: 0.5, -0.5).withUnsafeBufferPointer { ring.write($0) }
        var output: [Float] = [0, 0]
        #expect(written == 2)
        #expect(output.withUnsafeMutableBufferPointer { ring.read(into: $0) } == 2 && output == [0.5, -0.5])
    }

    @Test("reading by adding sums the oldest samples into the destination across the wrap, and removes them")
    func readAdding() {
        let ring = RingBuffer<Float>(capacity: 5)
        _ = [Float](arrayLiteral: 9, 9, 9).withUnsafeBufferPointer { ring.write($0) }
        #expect(ring.discard(3) == 3)
        // Head at 3 of 5: the next four samples wrap.
        _ = [Float](arrayLiteral: 1, 2, 3, 4).withUnsafeBufferPointer { ring.write($0) }
        var mix: [Float] = [10, 10, 10, 10, 10]
        let added = mix.withUnsafeMutableBufferPointer { ring.read(adding: $0.baseAddress!, count: 5) }
        #expect(added == 4 && mix == [11, 12, 13, 14, 10] && ring.isEmpty)
        _ = [Float](arrayLiteral: 1, 2, 3).withUnsafeBufferPointer { ring.write($0) }
        var short: [Float] = [0, 0]
        #expect(short.withUnsafeMutableBufferPointer { ring.read(adding: $0.baseAddress!, count: 2) } == 2)
        #expect(short == [1, 2] && ring.count == 1)
    }
}

@Suite("Ring buffer growth")
struct RingBufferGrowthTests {
    @Test("a buffer that starts small grows on write and behaves like one allocated at full size")
    func growsLikeFull() {
        var generator = SeededGenerator(seed: 9)
        let small = RingBuffer<Int32>(capacity: 1000, initialCapacity: 3)
        let full = RingBuffer<Int32>(capacity: 1000)
        var next: Int32 = 0
        for _ in 0..<5000 {
            let writeCount = Int(generator.next() % 300)
            let chunk = (0..<writeCount).map { _ -> Int32 in
                next += 1
                return next
            }
            let overwrite = generator.next() % 4 == 0
            let results = chunk.withUnsafeBufferPointer { source in
                overwrite
                    ? (small.writeOverwritingOldest(source), full.writeOverwritingOldest(source))
                    : (small.write(source), full.write(source))
            }
            #expect(results.0 == results.1)
            let readCount = Int(generator.next() % 300)
            var a = [Int32](repeating: 0, count: readCount)
            var b = [Int32](repeating: 0, count: readCount)
            let readA = a.withUnsafeMutableBufferPointer { small.read(into: $0) }
            let readB = b.withUnsafeMutableBufferPointer { full.read(into: $0) }
            #expect(readA == readB)
            #expect(a == b)
            #expect(small.count == full.count)
        }
    }
}
