import CFFmpeg

/// An open libavformat demuxer reading from a `ByteQueue` through a custom, non-seekable I/O context.
///
/// Only the container's own demuxer is ever used (no probing), so a lying Content-Type cannot
/// reach any other parser.
final class DemuxerHandle {
    let context: UnsafeMutablePointer<AVFormatContext>
    private var io: UnsafeMutablePointer<AVIOContext>?
    private let source: Unmanaged<ByteQueue>

    /// Bytes libav reads from the queue at a time.
    static let ioBufferSize = 4096

    init(container: AudioContainer, source queue: ByteQueue) throws(CodecError) {
        CodecLibrary.setUp()
        source = Unmanaged.passRetained(queue)
        guard let buffer = av_malloc(Self.ioBufferSize) else {
            source.release()
            throw CodecError(.library, "av_malloc: out of memory")
        }
        let read: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 = { opaque, target, size in
            guard let opaque, let target, size > 0 else { return audiogate_averror_eof() }
            let queue = Unmanaged<ByteQueue>.fromOpaque(opaque).takeUnretainedValue()
            switch queue.read(into: UnsafeMutableRawBufferPointer(start: target, count: Int(size))) {
            case .bytes(let count): return Int32(count)
            case .endOfFile: return audiogate_averror_eof()
            case .cancelled: return audiogate_averror_exit()
            }
        }
        guard
            let io = avio_alloc_context(
                buffer.assumingMemoryBound(to: UInt8.self), Int32(Self.ioBufferSize), 0, source.toOpaque(), read, nil, nil)
        else {
            av_free(buffer)
            source.release()
            throw CodecError(.library, "avio_alloc_context: out of memory")
        }
        self.io = io
        guard var context = avformat_alloc_context() else {
            Self.free(io: io)
            source.release()
            throw CodecError(.library, "avformat_alloc_context: out of memory")
        }
        context.pointee.pb = io
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        var options: OpaquePointer?
        av_dict_set(&options, "format_whitelist", "mp3,ogg,flac,matroska,webm", 0)
        av_dict_set(&options, "codec_whitelist", CodecLibrary.decoderNames.joined(separator: ","), 0)
        let format = av_find_input_format(container.demuxer)
        var opened: UnsafeMutablePointer<AVFormatContext>? = context
        let result = avformat_open_input(&opened, nil, format, &options)
        av_dict_free(&options)
        guard result >= 0, let opened else {
            // avformat_open_input freed the context on failure; the custom I/O is ours to free.
            Self.free(io: io)
            source.release()
            throw CodecError(
                result == audiogate_averror_exit() ? .cancelled : .corrupt,
                "avformat_open_input (\(container.rawValue)): \(avErrorMessage(result))")
        }
        context = opened
        self.context = context
    }

    deinit {
        var context: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&context)
        if let io { Self.free(io: io) }
        source.release()
    }

    private static func free(io: UnsafeMutablePointer<AVIOContext>) {
        var io: UnsafeMutablePointer<AVIOContext>? = io
        // The buffer may have been replaced by libav; free the current one.
        av_freep(&io!.pointee.buffer)
        avio_context_free(&io)
    }

    /// The first audio stream's index and parameters.
    ///
    /// Not `av_find_best_stream`: without `avformat_find_stream_info` (which would read seconds of
    /// input before the first sound) rate and channels may still be unknown; the decoder finds them.
    func audioStream() throws(CodecError) -> (index: Int32, parameters: UnsafeMutablePointer<AVCodecParameters>) {
        for index in 0..<Int(context.pointee.nb_streams) {
            guard let stream = context.pointee.streams[index], let parameters = stream.pointee.codecpar else { continue }
            if parameters.pointee.codec_type == AVMEDIA_TYPE_AUDIO { return (Int32(index), parameters) }
        }
        throw CodecError(.unsupported, "the file holds no audio stream")
    }

    /// Reads the next packet; false at the end of the input.
    func read(into packet: PacketHandle) throws(CodecError) -> Bool {
        let result = av_read_frame(context, packet.packet)
        if result == audiogate_averror_eof() { return false }
        try avCheck(result, "av_read_frame")
        return true
    }
}
