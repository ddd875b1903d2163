import AudioGateCore
import AudioGateServer
import AudioGateTestSupport
import Foundation
import Testing

/// Seeded mutations of real files through the decoder uploads use: nothing may crash or hang.
///
/// `AUDIOGATE_FUZZ_CASES` sets the cases per decoder path (default 600; `make fuzz` runs 100000).
@Suite("codec fuzzing")
struct CodecFuzzTests {
    static var casesPerPath: Int {
        ProcessInfo.processInfo.environment["AUDIOGATE_FUZZ_CASES"].flatMap(Int.init) ?? 600
    }

    /// Recomputes every Ogg page's CRC, so mutations reach the codec instead of stopping at the
    /// demuxer's checksum (which drops a damaged page).
    static func fixOggChecksums(_ bytes: inout [UInt8]) {
        var table = [UInt32](repeating: 0, count: 256)
        for index in 0..<256 {
            var value = UInt32(index) << 24
            for _ in 0..<8 { value = value & 0x8000_0000 != 0 ? (value << 1) ^ 0x04C1_1DB7 : value << 1 }
            table[index] = value
        }
        var at = 0
        while at + 27 <= bytes.count {
            guard bytes[at] == 0x4F, bytes[at + 1] == 0x67, bytes[at + 2] == 0x67, bytes[at + 3] == 0x53 else {
                at += 1
                continue
            }
            let segments = Int(bytes[at + 26])
            guard at + 27 + segments <= bytes.count else { return }
            let bodyLength = bytes[(at + 27)..<(at + 27 + segments)].reduce(0) { $0 + Int($1) }
            let end = at + 27 + segments + bodyLength
            guard end <= bytes.count else { return }
            for index in 22..<26 { bytes[at + index] = 0 }
            var crc: UInt32 = 0
            for byte in bytes[at..<end] { crc = (crc << 8) ^ table[Int(((crc >> 24) ^ UInt32(byte)) & 0xFF)] }
            for index in 0..<4 { bytes[at + 22 + index] = UInt8((crc >> (8 * UInt32(index))) & 0xFF) }
            at = end
        }
    }

    @Test("mutated files of every decoder path decode or fail cleanly", arguments: CodecFixtures.paths.map(\.description))
    func fuzz(path: String) throws {
        let kind = try #require(CodecFixtures.paths.first { $0.description == path })
        let file = try CodecFixtures.make(kind, frequency: 440, seconds: 1)
        let others = try CodecFixtures.paths.filter { $0.description != path }.map { try CodecFixtures.make($0, frequency: 880, seconds: 0.3) }
        let clean = CompressedAudio.decode(file, container: kind.container)
        #expect(clean.error == nil && clean.frames > 0, "\(kind): the unmutated file must decode: \(String(describing: clean.error))")
        let pathIndex = CodecFixtures.paths.firstIndex { $0.description == path } ?? 0
        var generator = SeededGenerator(seed: 1_400 &+ UInt64(pathIndex))
        var decoded = 0
        var failed = 0
        let count = Self.casesPerPath
        let started = MonotonicClock.nowMilliseconds()
        for index in 0..<count {
            let other = others[index % others.count]
            // Same-format splices too: they stress resynchronisation inside one demuxer.
            var input = generator.mutate(file, other: index % 3 == 0 ? file : other)
            if kind.container == .ogg, index % 4 != 0 { Self.fixOggChecksums(&input) }
            let result = CompressedAudio.decode(input, container: kind.container)
            if result.error == nil { decoded += 1 } else { failed += 1 }
        }
        let seconds = (MonotonicClock.nowMilliseconds() - started) / 1000
        RealTime.log(
            "fuzz \(kind): \(count) cases in \(String(format: "%.1f", seconds)) s (\(String(format: "%.0f", Double(count) / max(seconds, 0.001))) cases/s), \(decoded) decoded, \(failed) refused")
    }
}
