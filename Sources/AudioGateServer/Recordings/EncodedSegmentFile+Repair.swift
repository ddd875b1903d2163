import AudioGateCore

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
        let descriptor = try RecordingFile.open(path, O_RDWR)
        defer { close(descriptor) }
        var info = stat()
        try systemCheck("fstat", path: path) { fstat(descriptor, &info) }
        let size = Int(info.st_size)
        var frames = 0
        var length = 0
        var header: [UInt8] = []
        if size > 0 {
            // Mapped, not read: a segment can be an hour of audio.
            guard let mapped = mmap(nil, size, PROT_READ, MAP_PRIVATE, descriptor, 0), mapped != MAP_FAILED else {
                throw RecordingError.system("mmap", path: path)
            }
            defer { munmap(mapped, size) }
            let raw = UnsafeRawBufferPointer(start: mapped, count: size)
            switch codec {
            case .flac:
                if let scan = FLACFrames.scan(raw) {
                    frames = scan.samples
                    length = scan.validLength
                    header = Array(raw.prefix(42))
                }
            case .opus:
                let scan = OggPages.scan(raw)
                if let preSkip = scan.opusPreSkip, scan.lastGranule > Int64(preSkip) {
                    // Granules count 48 kHz samples whatever the input rate.
                    frames = Int((Double(scan.lastGranule - Int64(preSkip)) * Double(format.rate) / 48000).rounded())
                    length = scan.validLength
                }
            case .wav:
                break
            }
        }
        guard frames > 0 else {
            try RecordingFile.remove(path)
            return (0, 0)
        }
        try systemCheck("ftruncate", path: path) { ftruncate(descriptor, off_t(length)) }
        if codec == .flac { try setTotalSamples(frames, descriptor: descriptor, path: path, header: header) }
        try systemCheck("fsync", path: path) { fsync(descriptor) }
        return (frames, length)
    }
}
