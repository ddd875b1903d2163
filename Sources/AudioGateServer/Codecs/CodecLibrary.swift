import CFFmpeg
import Synchronization

/// Process-wide libav settings, applied once before the first decoder opens.
enum CodecLibrary {
    /// The decoders allowed, by codec id, with libav's decoder names.
    static let decoders: [AVCodecID: String] = [
        AV_CODEC_ID_MP3: "mp3float", AV_CODEC_ID_OPUS: "opus", AV_CODEC_ID_VORBIS: "vorbis", AV_CODEC_ID_FLAC: "flac",
    ]

    static let decoderNames = ["mp3float", "mp3", "opus", "vorbis", "flac"]

    /// Largest single allocation libav may make: audio never needs more, and a hostile length
    /// field in a container cannot reserve gigabytes.
    static let maximumAllocation = 16 * 1024 * 1024

    private static let done = Atomic<Bool>(false)

    static func setUp() {
        guard !done.exchange(true, ordering: .acquiringAndReleasing) else { return }
        audiogate_av_quiet()
        av_max_alloc(maximumAllocation)
    }
}
