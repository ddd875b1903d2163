import CFFmpeg

/// An open libavformat muxer with one audio stream, writing either through a non-seekable custom
/// I/O context into an `EncodedOutput` (live streams: bytes come out as each page, frame or cluster
/// completes) or to a file it opens (MP4, whose index is moved to the front at the end).
final class MuxerHandle {
    let context: UnsafeMutablePointer<AVFormatContext>
    let stream: UnsafeMutablePointer<AVStream>
    private let output: Unmanaged<EncodedOutput>?
    private var customIO: UnsafeMutablePointer<AVIOContext>?
    private var headerWritten = false
    private var trailerWritten = false

    static let ioBufferSize = 4096

    /// Whether the muxer `name` wants codec headers as extradata (the encoder's global header flag).
    static func wantsGlobalHeader(_ name: String) throws(CodecError) -> Bool {
        guard let format = av_guess_format(name, nil, nil) else {
            throw CodecError(.unsupported, "av_guess_format: no \(name) muxer in this libavformat")
        }
        return format.pointee.flags & AVFMT_GLOBALHEADER != 0
    }

    /// A muxer writing into `output` (non-seekable).
    convenience init(format name: String, encoder: EncoderHandle, output: EncodedOutput, options: [String: String] = [:]) throws(CodecError) {
        try self.init(format: name, encoder: encoder, output: output, path: nil, options: options)
    }

    /// A muxer writing the file at `path` (seekable; created or truncated).
    convenience init(format name: String, encoder: EncoderHandle, path: String, options: [String: String] = [:]) throws(CodecError) {
        try self.init(format: name, encoder: encoder, output: nil, path: path, options: options)
    }

    private init(
        format name: String, encoder: EncoderHandle, output: EncodedOutput?, path: String?, options: [String: String]
    ) throws(CodecError) {
        CodecLibrary.setUp()
        var allocated: UnsafeMutablePointer<AVFormatContext>?
        try avCheck(avformat_alloc_output_context2(&allocated, nil, name, path), "avformat_alloc_output_context2 (\(name))")
        guard let context = allocated else { throw CodecError(.library, "avformat_alloc_output_context2: no context") }
        guard let stream = avformat_new_stream(context, nil) else {
            avformat_free_context(context)
            throw CodecError(.library, "avformat_new_stream: out of memory")
        }
        self.context = context
        self.stream = stream
        self.output = output.map { Unmanaged.passRetained($0) }
        // From here on deinit frees what is set.
        stream.pointee.time_base = encoder.context.pointee.time_base
        try avCheck(avcodec_parameters_from_context(stream.pointee.codecpar, encoder.context), "avcodec_parameters_from_context")
        if let output = self.output {
            guard let buffer = av_malloc(Self.ioBufferSize) else { throw CodecError(.library, "av_malloc: out of memory") }
            let write: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 = { opaque, bytes, size in
                guard let opaque, let bytes, size > 0 else { return 0 }
                Unmanaged<EncodedOutput>.fromOpaque(opaque).takeUnretainedValue()
                    .append(UnsafeRawBufferPointer(start: bytes, count: Int(size)))
                return size
            }
            guard
                let io = avio_alloc_context(
                    buffer.assumingMemoryBound(to: UInt8.self), Int32(Self.ioBufferSize), 1, output.toOpaque(), nil, write, nil)
            else {
                av_free(buffer)
                throw CodecError(.library, "avio_alloc_context: out of memory")
            }
            customIO = io
            io.pointee.seekable = 0
            context.pointee.pb = io
            context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        } else if let path {
            var options: OpaquePointer?
            av_dict_set(&options, "protocol_whitelist", "file", 0)
            defer { av_dict_free(&options) }
            try avCheck(avio_open2(&context.pointee.pb, path, AVIO_FLAG_WRITE, nil, &options), "avio_open2 (\(path))")
        }
        var dictionary: OpaquePointer?
        defer { av_dict_free(&dictionary) }
        for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
        try avCheck(avformat_write_header(context, &dictionary), "avformat_write_header (\(name))")
        headerWritten = true
        try flush()
    }

    deinit {
        if headerWritten, !trailerWritten { _ = av_write_trailer(context) }
        if let io = customIO {
            av_freep(&io.pointee.buffer)
            var pointer: UnsafeMutablePointer<AVIOContext>? = io
            avio_context_free(&pointer)
            context.pointee.pb = nil
        } else if context.pointee.pb != nil {
            avio_closep(&context.pointee.pb)
        }
        avformat_free_context(context)
        output?.release()
    }

    /// The stream's time base, fixed by the muxer's header.
    var timeBase: AVRational { stream.pointee.time_base }

    /// Writes one encoded packet (timestamps in `from`, the encoder's time base).
    func write(_ packet: PacketHandle, from timeBase: AVRational) throws(CodecError) {
        packet.packet.pointee.stream_index = stream.pointee.index
        av_packet_rescale_ts(packet.packet, timeBase, stream.pointee.time_base)
        try avCheck(av_write_frame(context, packet.packet), "av_write_frame")
    }

    /// Ends the page or cluster being filled and pushes every byte out to the output.
    func flush() throws(CodecError) {
        if context.pointee.oformat.pointee.flags & AVFMT_ALLOW_FLUSH != 0 {
            try avCheck(av_write_frame(context, nil), "av_write_frame (flush)")
        }
        avio_flush(context.pointee.pb)
        try avCheck(context.pointee.pb.pointee.error, "avio_flush")
    }

    /// Writes the trailer (an MP4's index; the last Ogg page) and flushes.
    func finish() throws(CodecError) {
        guard !trailerWritten else { return }
        trailerWritten = true
        try avCheck(av_write_trailer(context), "av_write_trailer")
        avio_flush(context.pointee.pb)
        try avCheck(context.pointee.pb.pointee.error, "avio_flush")
    }
}
