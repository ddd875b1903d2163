@testable import AudioGateServer
import CFFmpeg

/// Decodes bare Opus packets (no container) one at a time to interleaved float at 48 kHz (what
/// libavcodec's Opus decoders give whatever the encoder's rate): what a client of the
/// `format=opus` capture WebSocket does with each binary frame. Runs the server's decode loop.
final class PacketDecoder {
    private let decoder: DecoderHandle
    private let packet: PacketHandle
    private let frame: FrameHandle
    private var padded: [UInt8] = []
    private var scratch: [Float] = []

    init(rate: Int, channels: Int) throws(CodecError) {
        decoder = try DecoderHandle(codec: AV_CODEC_ID_OPUS, rate: rate, channels: channels)
        packet = try PacketHandle()
        frame = try FrameHandle()
    }

    /// The samples of one packet, interleaved.
    func decode(_ bytes: [UInt8]) throws(CodecError) -> [Float] {
        var samples: [Float] = []
        let result: Result<Void, CodecError> = bytes.withUnsafeBytes { raw in
            Result { () throws(CodecError) in
                try decoder.decode(bytes: raw, packet: packet, padded: &padded, into: frame, failure: { $0 }) {
                    decoded throws(CodecError) in
                    let count = try decoded.interleave(into: &scratch)
                    samples += scratch[0..<count]
                }
            }
        }
        try result.get()
        return samples
    }
}
