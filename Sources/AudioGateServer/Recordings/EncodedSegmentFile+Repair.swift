import AudioGateCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension EncodedSegmentFile {
    /// Makes a FLAC or Ogg Opus segment left behind by a crash valid: the file is cut after its last
    /// whole frame or page whose CRCs check out, and FLAC's STREAMINFO states the samples kept.
    /// Answers the frames and bytes kept (0 frames removes the file).
    static func repair(path: String, codec: RecordingCodec, format: AudioFormat) throws(RecordingError) -> (frames: Int, bytes: Int) {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        } catch {
            throw RecordingError(.io, "cannot read \(path): \((error as NSError).localizedDescription)")
        }
        var frames = 0
        var length = 0
        var header: [UInt8] = []
        data.withUnsafeBytes { raw in
            switch codec {
            case .flac:
                guard let scan = FLACFrames.scan(raw) else { return }
                frames = scan.samples
                length = scan.validLength
                header = Array(raw.prefix(42))
            case .opus:
                let scan = OggPages.scan(raw)
                guard let preSkip = scan.opusPreSkip, scan.lastGranule > Int64(preSkip) else { return }
                // Granules count 48 kHz samples whatever the input rate.
                frames = Int((Double(scan.lastGranule - Int64(preSkip)) * Double(format.rate) / 48000).rounded())
                length = scan.validLength
            case .wav:
                return
            }
        }
        guard frames > 0 else {
            try systemCheck("unlink", path: path) { unlink(path) }
            return (0, 0)
        }
        let descriptor = try systemCheck("open", path: path) { open(path, O_WRONLY | O_CLOEXEC) }
        defer { close(descriptor) }
        try systemCheck("ftruncate", path: path) { ftruncate(descriptor, off_t(length)) }
        if codec == .flac { try setTotalSamples(frames, descriptor: descriptor, path: path, header: header) }
        try systemCheck("fsync", path: path) { fsync(descriptor) }
        return (frames, length)
    }
}
