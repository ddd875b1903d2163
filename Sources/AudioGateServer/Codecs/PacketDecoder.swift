import CFFmpeg

/// Decodes bare Opus packets (no container) one at a time to interleaved float at 48 kHz (what
/// libavcodec's Opus decoders give whatever the encoder's rate): what a client of the
/// `format=opus` capture WebSocket does with each binary frame.
final class PacketDecoder {
    private let decoder: UnsafeMutablePointer<AVCodecContext>
    private let packet: PacketHandle
    private let frame: FrameHandle
    let channels: Int

    init(rate: Int, channels: Int) throws(CodecError) {
        CodecLibrary.setUp()
        guard let codec = avcodec_find_decoder_by_name("opus") else {
            throw CodecError(.unsupported, "avcodec_find_decoder_by_name: no opus decoder in this libavcodec")
        }
        guard let context = avcodec_alloc_context3(codec) else { throw CodecError(.library, "avcodec_alloc_context3: out of memory") }
        decoder = context
        self.channels = channels
        packet = try PacketHandle()
        frame = try FrameHandle()
        context.pointee.sample_rate = Int32(rate)
        av_channel_layout_default(&context.pointee.ch_layout, Int32(channels))
        try avCheck(avcodec_open2(context, codec, nil), "avcodec_open2 (opus)")
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = decoder
        avcodec_free_context(&context)
    }

    /// The samples of one packet, interleaved.
    func decode(_ bytes: [UInt8]) throws(CodecError) -> [Float] {
        try avCheck(av_new_packet(packet.packet, Int32(bytes.count)), "av_new_packet")
        defer { packet.unref() }
        bytes.withUnsafeBytes { UnsafeMutableRawPointer(packet.packet.pointee.data).copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        try avCheck(avcodec_send_packet(decoder, packet.packet), "avcodec_send_packet")
        var samples: [Float] = []
        while true {
            let result = avcodec_receive_frame(decoder, frame.frame)
            if result == audiogate_averror_eagain() || result == audiogate_averror_eof() { break }
            try avCheck(result, "avcodec_receive_frame")
            defer { av_frame_unref(frame.frame) }
            let count = Int(frame.frame.pointee.nb_samples)
            let frameChannels = Int(frame.frame.pointee.ch_layout.nb_channels)
            var interleaved = [Float](repeating: 0, count: count * frameChannels)
            guard let data = frame.frame.pointee.extended_data,
                interleaved.withUnsafeMutableBufferPointer({
                    SampleInterleaver.interleave(data, format: frame.frame.pointee.format, frames: count, channels: frameChannels, into: $0)
                })
            else { throw CodecError(.unsupported, "decoded sample format not supported") }
            samples += interleaved
        }
        return samples
    }
}
