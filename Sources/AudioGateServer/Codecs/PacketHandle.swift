import CFFmpeg

/// An `AVPacket`, reused for every read.
final class PacketHandle {
    let packet: UnsafeMutablePointer<AVPacket>

    init() throws(CodecError) {
        guard let packet = av_packet_alloc() else { throw CodecError(.library, "av_packet_alloc: out of memory") }
        self.packet = packet
    }

    deinit {
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packet)
    }

    /// Drops the packet's data so it can be read into again.
    func unref() { av_packet_unref(packet) }
}
