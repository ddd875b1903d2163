import CFFmpeg

/// An open libavcodec audio decoder for one of the allowed codecs, and the one decode loop every
/// decoder runs: a packet in, each frame it yields handed on, the frame released after.
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

    /// A decoder for packets without a container: the codec, and what its packets do not say
    /// themselves (the rate and channels of Opus, the header packets of FLAC and Vorbis as `extradata`).
    convenience init(codec id: AVCodecID, rate: Int = 0, channels: Int = 0, extradata: [UInt8] = []) throws(CodecError) {
        CodecLibrary.setUp()
        var allocated = avcodec_parameters_alloc()
        defer { avcodec_parameters_free(&allocated) }
        guard let parameters = allocated else { throw CodecError(.library, "avcodec_parameters_alloc: out of memory") }
        parameters.pointee.codec_type = AVMEDIA_TYPE_AUDIO
        parameters.pointee.codec_id = id
        if rate > 0 { parameters.pointee.sample_rate = Int32(rate) }
        if channels > 0 { av_channel_layout_default(&parameters.pointee.ch_layout, Int32(channels)) }
        if !extradata.isEmpty {
            // libav owns and frees extradata: it must come from av_malloc, padded.
            guard let copy = av_mallocz(extradata.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
                throw CodecError(.library, "av_mallocz: out of memory")
            }
            extradata.withUnsafeBytes { copy.copyMemory(from: $0.baseAddress!, byteCount: extradata.count) }
            parameters.pointee.extradata = copy.assumingMemoryBound(to: UInt8.self)
            parameters.pointee.extradata_size = Int32(extradata.count)
        }
        try self.init(parameters: parameters)
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

    /// Sends `packet` (nil: the end of the input) and hands every frame it yields to `body`.
    /// A library failure becomes the caller's error through `failure`.
    func decode<Failure: Error>(
        _ packet: PacketHandle?, into frame: FrameHandle, failure: (CodecError) -> Failure,
        _ body: (DecodedFrame) throws(Failure) -> Void
    ) throws(Failure) {
        do throws(CodecError) {
            try send(packet)
        } catch {
            throw failure(error)
        }
        try drain(into: frame, failure: failure, body)
    }

    /// Decodes one whole packet held in `bytes` without a container. libavcodec reads up to 64
    /// bytes past a packet's end, so the bytes go through `padded`, a zero-padded copy kept by the
    /// caller; the packet points into it only until the send returns (an unowned packet is copied).
    func decode<Failure: Error>(
        bytes: UnsafeRawBufferPointer, packet: PacketHandle, padded: inout [UInt8], into frame: FrameHandle,
        failure: (CodecError) -> Failure, _ body: (DecodedFrame) throws(Failure) -> Void
    ) throws(Failure) {
        guard !bytes.isEmpty else { return }
        let size = bytes.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)
        if padded.count < size { padded = [UInt8](repeating: 0, count: size) }
        let sent = padded.withUnsafeMutableBytes { target in
            target.copyMemory(from: bytes)
            for index in bytes.count..<size { target[index] = 0 }
            packet.packet.pointee.data = target.baseAddress?.assumingMemoryBound(to: UInt8.self)
            packet.packet.pointee.size = Int32(bytes.count)
            defer {
                packet.packet.pointee.data = nil
                packet.packet.pointee.size = 0
            }
            return Result<Void, CodecError> { () throws(CodecError) in try send(packet) }
        }
        do throws(CodecError) {
            try sent.get()
        } catch {
            throw failure(error)
        }
        try drain(into: frame, failure: failure, body)
    }

    /// Hands every frame the decoder has ready to `body`, releasing each after. With
    /// `skippingDamaged` a frame that does not decode ends the drain quietly, as players skip it.
    func drain<Failure: Error>(
        into frame: FrameHandle, skippingDamaged: Bool = false, failure: (CodecError) -> Failure,
        _ body: (DecodedFrame) throws(Failure) -> Void
    ) throws(Failure) {
        while true {
            let got: Bool
            do throws(CodecError) {
                got = try receive(into: frame)
            } catch where skippingDamaged && error.code == .corrupt {
                return
            } catch {
                throw failure(error)
            }
            guard got else { return }
            defer { av_frame_unref(frame.frame) }
            let decoded = DecodedFrame(frame.frame)
            guard decoded.frames > 0 else { continue }
            try body(decoded)
        }
    }
}
