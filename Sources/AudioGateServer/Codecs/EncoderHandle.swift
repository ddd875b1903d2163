import CFFmpeg

/// An open libavcodec audio encoder for one `AudioEncoding`.
final class EncoderHandle {
    let context: UnsafeMutablePointer<AVCodecContext>
    /// The sample format frames are handed over in (the first of the encoder's that
    /// `SampleDeinterleaver` writes).
    let sampleFormat: AVSampleFormat
    /// Frames per encoder call; every frame but the last has exactly this many.
    let frameSize: Int
    /// Whether the last frame may be shorter (otherwise it is padded with silence).
    let takesSmallLastFrame: Bool

    /// Opens the encoder; `globalHeader` when the muxer wants the codec headers as extradata.
    init(_ encoding: AudioEncoding, globalHeader: Bool) throws(CodecError) {
        CodecLibrary.setUp()
        let name = encoding.codec.encoderName
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw CodecError(.unsupported, "avcodec_find_encoder_by_name: no \(name) encoder in this libavcodec")
        }
        guard let format = Self.pickSampleFormat(codec) else {
            throw CodecError(.unsupported, "the \(name) encoder takes no sample format the server writes")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw CodecError(.library, "avcodec_alloc_context3: out of memory")
        }
        self.context = context
        sampleFormat = format
        context.pointee.sample_fmt = format
        context.pointee.sample_rate = Int32(encoding.rate)
        context.pointee.time_base = AVRational(num: 1, den: Int32(encoding.rate))
        av_channel_layout_default(&context.pointee.ch_layout, Int32(encoding.channels))
        context.pointee.thread_count = 1
        if let bitrate = encoding.effectiveBitrate { context.pointee.bit_rate = Int64(bitrate) }
        if globalHeader { context.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER) }
        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        switch encoding.codec {
        case .opus:
            av_dict_set(&options, "frame_duration", "\(encoding.packetMilliseconds)", 0)
            av_dict_set(&options, "application", "audio", 0)
        case .flac:
            // Frames of about 100 ms keep a live stream's latency low at little cost in size.
            context.pointee.frame_size = Int32(max(256, encoding.rate / 10 / 16 * 16))
        case .vorbis, .mp3, .aac:
            break
        }
        try avCheck(avcodec_open2(context, codec, &options), "avcodec_open2 (\(name))")
        let capabilities = codec.pointee.capabilities
        takesSmallLastFrame = capabilities & Int32(AV_CODEC_CAP_SMALL_LAST_FRAME) != 0
            || capabilities & Int32(AV_CODEC_CAP_VARIABLE_FRAME_SIZE) != 0
        let size = Int(context.pointee.frame_size)
        frameSize = size > 0 ? size : max(1, encoding.rate * encoding.packetMilliseconds / 1000)
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&context)
    }

    /// Samples (at the codec's rate) the decoder drops from the start: Opus' pre-skip.
    var initialPadding: Int { Int(context.pointee.initial_padding) }

    /// Sends one frame (nil: end of stream, drain).
    func send(_ frame: FrameHandle?) throws(CodecError) {
        try avCheck(avcodec_send_frame(context, frame?.frame), "avcodec_send_frame")
    }

    /// Receives the next packet; false when the encoder needs more input or is drained.
    func receive(into packet: PacketHandle) throws(CodecError) -> Bool {
        let result = avcodec_receive_packet(context, packet.packet)
        if result == audiogate_averror_eagain() || result == audiogate_averror_eof() { return false }
        try avCheck(result, "avcodec_receive_packet")
        return true
    }

    private static func pickSampleFormat(_ codec: UnsafePointer<AVCodec>) -> AVSampleFormat? {
        guard var formats = codec.pointee.sample_fmts else { return AV_SAMPLE_FMT_FLT }
        while formats.pointee != AV_SAMPLE_FMT_NONE {
            if SampleDeinterleaver.supports(formats.pointee) { return formats.pointee }
            formats += 1
        }
        return nil
    }
}
