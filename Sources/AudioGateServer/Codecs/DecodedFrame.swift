import CFFmpeg

/// A frame the decode loop (`DecoderHandle.drain`) hands on: valid only inside the loop's body.
struct DecodedFrame {
    let frame: UnsafeMutablePointer<AVFrame>

    init(_ frame: UnsafeMutablePointer<AVFrame>) {
        self.frame = frame
    }

    /// Frames (samples per channel).
    var frames: Int { Int(frame.pointee.nb_samples) }
    var channels: Int { Int(frame.pointee.ch_layout.nb_channels) }
    var rate: Int { Int(frame.pointee.sample_rate) }
    /// libav's sample format (`AVSampleFormat` raw value).
    var sampleFormat: Int32 { frame.pointee.format }

    /// The samples as interleaved float at the start of `buffer`, which grows when it is short;
    /// returns how many samples were written.
    func interleave(into buffer: inout [Float]) throws(CodecError) -> Int {
        guard let data = frame.pointee.extended_data else { throw CodecError(.library, "decoded frame without data") }
        let frames = frames
        let channels = channels
        let total = frames * channels
        if buffer.count < total { buffer = [Float](repeating: 0, count: total) }
        let format = sampleFormat
        let converted = buffer.withUnsafeMutableBufferPointer { target in
            SampleInterleaver.interleave(data, format: format, frames: frames, channels: channels, into: target)
        }
        guard converted else {
            let name = av_get_sample_fmt_name(AVSampleFormat(rawValue: format)).map { String(cString: $0) } ?? "\(format)"
            throw CodecError(.unsupported, "decoded sample format \(name) is not supported")
        }
        return total
    }
}
