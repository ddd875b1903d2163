import CFFmpeg

/// An `AVFrame` of decoded samples, reused for every frame.
final class FrameHandle {
    let frame: UnsafeMutablePointer<AVFrame>

    init() throws(CodecError) {
        guard let frame = av_frame_alloc() else { throw CodecError(.library, "av_frame_alloc: out of memory") }
        self.frame = frame
    }

    deinit {
        var frame: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&frame)
    }
}
