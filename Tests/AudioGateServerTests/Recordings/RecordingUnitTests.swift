import AudioGateCore
import AudioGateTestSupport
import Foundation
import Testing

@testable import AudioGateServer

/// The recording pieces without a sound card: request validation, ids, ranges, the segment writer
/// and crash repair.
@Suite("recordings: writer, repair and validation")
struct RecordingUnitTests {
    @Test("request bodies are validated field by field")
    func requestValidation() throws {
        let good = try RecordingRequest(
            json: Data(#"{"rate":48000,"channels":2,"format":"f32le","segment_seconds":5,"max_seconds":1.5,"name":"x"}"#.utf8))
        #expect(good.format == AudioFormat(rate: 48000, channels: 2, sampleFormat: .f32le))
        #expect(good.segmentFrames == 240_000)
        #expect(good.maxFrames == 72_000)
        #expect(try RecordingRequest(json: Data()) == RecordingRequest())
        let bad = [
            #"{"format":"mp3"}"#, #"{"format":"u8"}"#, #"{"rate":12345}"#, #"{"channels":3}"#, #"{"segment_seconds":0}"#,
            #"{"segment_seconds":3601}"#, #"{"segment_seconds":"10"}"#, #"{"max_seconds":0}"#, #"{"max_seconds":-1}"#,
            #"{"name":"a\u0000b"}"#, "[1]", "{", #"{"rate":null,"channels":"x"}"#,
        ]
        for body in bad {
            #expect("\(body)") { try RecordingRequest(json: Data(body.utf8)) } throws: { error in
                (error as? RecordingError)?.reason == .badBody
            }
        }
        do {
            _ = try RecordingRequest(json: Data(#"{"segment_seconds":"10"}"#.utf8))
        } catch {
            #expect(error.message.contains("segment_seconds"))
        }
    }

    @Test("ids are generated in the safe alphabet; anything else is refused before any lookup")
    func ids() {
        let id = RecordingID.make()
        #expect(RecordingID.isValid(id))
        #expect(id.count == 22)
        for bad in ["", "../x", "..", "a/b", "A", "-x", "x y", String(repeating: "a", count: 65), "%2e", "a\u{0}"] {
            #expect(!RecordingID.isValid(bad), "\(bad)")
        }
    }

    @Test("Range headers: one range served, others answered in full, ranges past the end refused")
    func ranges() {
        #expect(ByteRange(header: nil, length: 100) == .whole)
        #expect(ByteRange(header: "bytes=0-9", length: 100) == .partial(0...9))
        #expect(ByteRange(header: "bytes=90-", length: 100) == .partial(90...99))
        #expect(ByteRange(header: "bytes=90-500", length: 100) == .partial(90...99))
        #expect(ByteRange(header: "bytes=-10", length: 100) == .partial(90...99))
        #expect(ByteRange(header: "bytes=-500", length: 100) == .partial(0...99))
        #expect(ByteRange(header: "bytes=100-", length: 100) == .unsatisfiable)
        #expect(ByteRange(header: "bytes=-0", length: 100) == .unsatisfiable)
        #expect(ByteRange(header: "bytes=5-1", length: 100) == .whole)
        #expect(ByteRange(header: "bytes=0-1,5-6", length: 100) == .whole)
        #expect(ByteRange(header: "items=0-1", length: 100) == .whole)
        #expect(ByteRange(header: "bytes=x-1", length: 100) == .whole)
        #expect(ByteRange(header: "bytes=99999999999999999999-", length: 100) == .whole)
    }

    /// A writer on a fresh store: 1 s segments of 16 kHz mono s16le.
    static func writer(maxSeconds: Double? = nil, quota: DiskQuota = DiskQuota(limitMegabytes: 0)) throws
        -> (RecordingWriter, RecordingStore)
    {
        let store = try RecordingStore(dataDirectory: RecordingFixtures.temporaryDirectory(), logger: TestServer.logger)
        var request = RecordingRequest()
        request.segmentSeconds = 1
        request.maxSeconds = maxSeconds
        let id = RecordingID.make()
        try store.create(id)
        let info = RecordingInfo(
            id: id, name: nil, state: .recording, rate: 16000, channels: 1, format: "s16le", segmentSeconds: 1,
            maxSeconds: maxSeconds, startedAt: Timestamp.format(Date()), endedAt: nil, frames: 0, bytes: 0, segments: [],
            gaps: [], failure: nil, stopReason: nil)
        return (RecordingWriter(info: info, request: request, store: store, quota: quota), store)
    }

    /// `count` chunks of `frames` frames of a counting ramp (sample n holds n mod 32768), timestamped
    /// 1/16000 s per frame from `start`.
    static func ramp(chunks count: Int, frames: Int, from first: Int) -> [[UInt8]] {
        (0..<count).map { chunk in
            var bytes: [UInt8] = []
            for frame in 0..<frames {
                let value = Int16((first + chunk * frames + frame) % 32768)
                bytes.append(UInt8(truncatingIfNeeded: value))
                bytes.append(UInt8(truncatingIfNeeded: value >> 8))
            }
            return bytes
        }
    }

    static func samples(_ path: String) throws -> [Int16] {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let header = try WAVHeader.parse(bytes)
        let data = bytes[header.dataOffset..<(header.dataOffset + (header.dataByteCount ?? 0))]
        return stride(from: data.startIndex, to: data.endIndex, by: 2).map { Int16(bitPattern: UInt16(data[$0]) | UInt16(data[$0 + 1]) << 8) }
    }

    @Test("segments hold exactly rate × seconds frames whatever the chunking; nothing lost or doubled")
    func exactSegments() throws {
        let (writer, store) = try Self.writer()
        // 1700-frame chunks never line up with the 16000-frame segments.
        let chunks = Self.ramp(chunks: 30, frames: 1700, from: 0)
        var timestamp: UInt64 = 1_000_000_000
        for chunk in chunks {
            try writer.write(chunk, timestamp: timestamp, gapReason: nil)
            timestamp += UInt64(1700) * 1_000_000_000 / 16000
        }
        writer.finish(.stopped, stopReason: "request")
        let info = writer.info
        #expect(info.frames == 51_000)
        #expect(info.segments.map(\.frames) == [16000, 16000, 16000, 3000])
        #expect(info.segments.map(\.startFrame) == [0, 16000, 32000, 48000])
        #expect(info.segments.allSatisfy { $0.complete })
        #expect(info.gaps.isEmpty)
        var all: [Int16] = []
        for segment in info.segments { all += try Self.samples(store.path(of: info.id, file: segment.file)) }
        #expect(all.count == 51_000)
        #expect(all.enumerated().allSatisfy { Int($0.element) == $0.offset % 32768 })
        // What is on disk is what the API reports.
        let saved = try RecordingStore.decoder.decode(
            RecordingInfo.self, from: Data(contentsOf: URL(fileURLWithPath: store.path(of: info.id, file: "recording.json"))))
        #expect(saved == info)
    }

    @Test("a jump in timestamps is written as silence of the same length and listed as a gap")
    func gapsAreSilence() throws {
        let (writer, store) = try Self.writer()
        let chunks = Self.ramp(chunks: 10, frames: 1600, from: 1)
        var timestamp: UInt64 = 5_000_000_000
        for (index, chunk) in chunks.enumerated() {
            // 350 ms of audio is missing before chunk 4 (the device was away).
            if index == 4 { timestamp += 350_000_000 }
            try writer.write(chunk, timestamp: timestamp, gapReason: index == 4 ? "device_lost" : nil)
            timestamp += 100_000_000
        }
        // Jitter below the threshold is not a gap.
        try writer.write(Self.ramp(chunks: 1, frames: 1600, from: 1)[0], timestamp: timestamp + 3_000_000, gapReason: nil)
        writer.finish(.stopped, stopReason: "request")
        let info = writer.info
        #expect(info.gaps == [RecordingInfo.Gap(startFrame: 6400, frames: 5600, startTime: info.time(atFrame: 6400), reason: "device_lost")])
        #expect(info.frames == 11 * 1600 + 5600)
        var all: [Int16] = []
        for segment in info.segments { all += try Self.samples(store.path(of: info.id, file: segment.file)) }
        #expect(all[6399] == 6400)
        #expect(all[6400..<12000].allSatisfy { $0 == 0 })
        #expect(all[12000] == 6401)
    }

    @Test("max_seconds stops at exactly that many frames")
    func maxSeconds() throws {
        let (writer, _) = try Self.writer(maxSeconds: 1.25)
        var timestamp: UInt64 = 0
        for chunk in Self.ramp(chunks: 20, frames: 1600, from: 0) where !writer.reachedLimit {
            try writer.write(chunk, timestamp: timestamp, gapReason: nil)
            timestamp += 100_000_000
        }
        writer.finish(.completed)
        #expect(writer.info.frames == 20000)
        #expect(writer.info.segments.map(\.frames) == [16000, 4000])
        #expect(writer.info.state == .completed)
    }

    @Test("the disk cap fails the recording with disk_limit once nothing is left to remove")
    func diskLimit() throws {
        let quota = DiskQuota(limitMegabytes: 1)
        let (writer, _) = try Self.writer(quota: quota)
        var failure: RecordingError?
        var timestamp: UInt64 = 0
        for chunk in Self.ramp(chunks: 400, frames: 1600, from: 0) {
            do {
                try writer.write(chunk, timestamp: timestamp, gapReason: nil)
            } catch {
                failure = error
                break
            }
            timestamp += 100_000_000
        }
        #expect(failure?.code == .diskLimit)
        #expect(quota.usedBytes <= 1 << 20)
        writer.finish(.stopped, failure: failure)
        #expect(writer.info.state == .failed)
        #expect(writer.info.failure?.code == "disk_limit")
    }

    @Test("a recording cut off mid-segment is repaired: whole frames kept, header fixed, marked interrupted")
    func repair() throws {
        let (writer, store) = try Self.writer()
        var timestamp: UInt64 = 0
        for chunk in Self.ramp(chunks: 25, frames: 1000, from: 0) {
            try writer.write(chunk, timestamp: timestamp, gapReason: nil)
            timestamp += 62_500_000
        }
        // The process dies: no finish. The open segment's header counts the last flush only, and
        // a torn write left half a frame at the end.
        let info = writer.info
        let open = store.path(of: info.id, file: RecordingStore.segmentFile(1))
        let handle = try #require(FileHandle(forWritingAtPath: open))
        try handle.seekToEnd()
        try handle.write(contentsOf: [0x55])
        try handle.close()
        let onDisk = try RecordingStore.decoder.decode(
            RecordingInfo.self, from: Data(contentsOf: URL(fileURLWithPath: store.path(of: info.id, file: "recording.json"))))
        #expect(onDisk.state == .recording)
        let repaired = store.repaired(onDisk)
        #expect(repaired.state == .interrupted)
        #expect(repaired.frames == 25_000)
        #expect(repaired.segments.map(\.frames) == [16000, 9000])
        #expect(repaired.segments.map(\.repaired) == [false, true])
        #expect(try Self.samples(open).count == 9000)
        #expect(try Self.samples(open).last == 24_999)
        #expect(repaired.endedAt == repaired.time(atFrame: 25_000))
    }
}
