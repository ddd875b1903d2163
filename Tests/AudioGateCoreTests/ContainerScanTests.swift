import AudioGateCore
import AudioGateTestSupport
import Foundation
import Testing

/// The Ogg page and FLAC frame walkers that repair cut segments, on files made by the real ffmpeg.
@Suite("Ogg and FLAC scans")
struct ContainerScanTests {
    /// `seconds` of a 440 Hz tone at 16 kHz mono, encoded by ffmpeg with `codec` arguments.
    static func make(_ codec: [String], extension fileExtension: String, seconds: Double = 3) throws -> [UInt8] {
        try FFmpegTool.convert(
            [], arguments: ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000:duration=\(seconds)"] + codec + ["OUTPUT"],
            outputExtension: fileExtension)
    }

    static func scanOgg(_ bytes: [UInt8]) -> OggPages.Scan { bytes.withUnsafeBytes { OggPages.scan($0) } }
    static func scanFLAC(_ bytes: [UInt8]) -> FLACFrames.Scan? { bytes.withUnsafeBytes { FLACFrames.scan($0) } }

    /// Frames ffmpeg decodes from a file at 16 kHz.
    static func decodedFrames(_ bytes: [UInt8], extension fileExtension: String) throws -> Int {
        let path = NSTemporaryDirectory() + "audiogate-scan-\(UUID().uuidString).\(fileExtension)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try FFmpegTool.probeStream(path: path)
        let output = try FFmpegTool.output(["ffmpeg", "-v", "error", "-i", path, "-ar", "16000", "-f", "s16le", "-"])
        return output.count / 2
    }

    @Test func oggOpusWhole() throws {
        let file = try Self.make(["-c:a", "libopus", "-b:a", "24k"], extension: "opus")
        let scan = Self.scanOgg(file)
        #expect(scan.validLength == file.count)
        #expect(scan.ended)
        #expect(scan.opusPreSkip == 312)
        // The last granule counts 48 kHz samples after the pre-skip: exactly the 3 s encoded.
        #expect(scan.lastGranule - Int64(scan.opusPreSkip ?? 0) == 144_000)
    }

    @Test("an Ogg file cut anywhere keeps its whole pages, and ffmpeg decodes what is kept", arguments: [0.3, 0.55, 0.8, 0.999])
    func oggCut(fraction: Double) throws {
        let file = try Self.make(["-c:a", "libopus", "-b:a", "24k", "-page_duration", "200000"], extension: "opus")
        let whole = Self.scanOgg(file)
        let cut = Array(file.prefix(Int(Double(file.count) * fraction)))
        let scan = Self.scanOgg(cut)
        #expect(scan.validLength <= cut.count && scan.validLength > 0)
        #expect(scan.pageCount < whole.pageCount && !scan.ended)
        // Nothing whole is lost: the next page would not have fitted.
        #expect(cut.count - scan.validLength < 4096)
        let kept = Array(cut.prefix(scan.validLength))
        #expect(Self.scanOgg(kept) == scan)
        let expected = Int((Double(scan.lastGranule - Int64(scan.opusPreSkip ?? 0)) / 3).rounded())
        let decoded = try Self.decodedFrames(kept, extension: "opus")
        #expect(abs(decoded - expected) <= 1, "decoded \(decoded), granule says \(expected)")
    }

    @Test func oggCorruptPageStopsTheScan() throws {
        var file = try Self.make(["-c:a", "libopus", "-b:a", "24k", "-page_duration", "200000"], extension: "opus")
        let whole = Self.scanOgg(file)
        file[file.count / 2] ^= 0x10
        let scan = Self.scanOgg(file)
        #expect(scan.validLength < file.count / 2 && scan.pageCount < whole.pageCount && scan.pageCount > 2)
    }

    @Test func flacWhole() throws {
        let file = try Self.make(["-c:a", "flac"], extension: "flac")
        let scan = try #require(Self.scanFLAC(file))
        #expect(scan.validLength == file.count)
        #expect(scan.samples == 48000)
        #expect(scan.frameCount > 1)
    }

    @Test("a FLAC file cut anywhere keeps its whole frames; with total samples set, ffmpeg decodes exactly those", arguments: [0.2, 0.5, 0.77, 0.999])
    func flacCut(fraction: Double) throws {
        let file = try Self.make(["-c:a", "flac", "-frame_size", "1024"], extension: "flac", seconds: 5)
        // ffmpeg puts 8 kB of padding in the metadata: cut within the frames after it.
        let audio = try #require(Self.scanFLAC(file)).audioOffset
        let cut = Array(file.prefix(audio + Int(Double(file.count - audio) * fraction)))
        let scan = try #require(Self.scanFLAC(cut))
        #expect(scan.validLength <= cut.count && scan.frameCount > 0)
        #expect(scan.samples == scan.frameCount * 1024)
        var kept = Array(cut.prefix(scan.validLength))
        var streamInfo = Array(kept[scan.streamInfoOffset..<(scan.streamInfoOffset + 34)])
        FLACFrames.setTotalSamples(scan.samples, in: &streamInfo)
        kept.replaceSubrange(scan.streamInfoOffset..<(scan.streamInfoOffset + 34), with: streamInfo)
        #expect(Self.scanFLAC(kept)?.validLength == kept.count)
        #expect(try Self.decodedFrames(kept, extension: "flac") == scan.samples)
        let path = NSTemporaryDirectory() + "audiogate-scan-\(UUID().uuidString).flac"
        try Data(kept).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let probe = try FFmpegTool.output(["ffprobe", "-v", "error", "-show_entries", "stream=duration_ts", "-of", "csv=p=0", path])
        #expect(String(decoding: probe, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "\(scan.samples)")
    }

    @Test func flacCorruptFrameStopsTheScan() throws {
        var file = try Self.make(["-c:a", "flac", "-frame_size", "1024"], extension: "flac", seconds: 5)
        let whole = try #require(Self.scanFLAC(file))
        let middle = whole.audioOffset + (file.count - whole.audioOffset) / 2
        file[middle] ^= 0x01
        let scan = try #require(Self.scanFLAC(file))
        #expect(scan.validLength <= middle && scan.frameCount > 10 && scan.frameCount < whole.frameCount)
        #expect(Self.scanFLAC(Array(file.prefix(20))) == nil)
    }
}
