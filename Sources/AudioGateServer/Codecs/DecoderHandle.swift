import CFFmpeg

/// An open libavcodec audio decoder for one of the allowed codecs.
final class DecoderHandle {
    let context: UnsafeMutablePointer<AVCodecContext>

    init(parameters: UnsafeMutablePointer<AVCodecParameters>) throws(CodecError) {
        let id = parameters.pointee.codec_id
        guard let name = CodecLibrary.decoders[id] else {
            let codecName = avcodec_get_name(id).map { String(cString: $0) } ?? "unknown"
            throw CodecError(.unsupported, "the audio codec \(codecName) is not supported: send MP3, Opus, Vorbis or FLAC")
        }
        guard let codec = avcodec_find_decoder_by_name(name) ?? avcodec_find_decoder(id) else {
            throw CodecError(.unsupported, "avcodec_find_decoder: no \(name) decoder in this libavcodec")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw CodecError(.library, "avcodec_alloc_context3: out of memory")
        }
        self.context = context
        try avCheck(avcodec_parameters_to_context(context, parameters), "avcodec_parameters_to_context")
        context.pointee.thread_count = 1
        try avCheck(avcodec_open2(context, codec, nil), "avcodec_open2")
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&context)
    }

    /// Sends one packet (nil: end of stream, drain).
    func send(_ packet: PacketHandle?) throws(CodecError) {
        try avCheck(avcodec_send_packet(context, packet?.packet), "avcodec_send_packet")
    }

    /// Receives the next decoded frame; false when the decoder needs more input or is drained.
    func receive(into frame: FrameHandle) throws(CodecError) -> Bool {
        let result = avcodec_receive_frame(context, frame.frame)
        if result == audiogate_averror_eagain() || result == audiogate_averror_eof() { return false }
        try avCheck(result, "avcodec_receive_frame")
        return true
    }
}
