import CFFmpeg

/// Converts interleaved float to an encoder's sample layout (planar or packed, integer or float):
/// the inverse of `SampleInterleaver`.
enum SampleDeinterleaver {
    static let formats: [AVSampleFormat] = [
        AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_FLT, AV_SAMPLE_FMT_S16P, AV_SAMPLE_FMT_S16, AV_SAMPLE_FMT_S32P, AV_SAMPLE_FMT_S32,
    ]

    static func supports(_ format: AVSampleFormat) -> Bool { formats.contains(format) }

    /// Writes `frames` frames of `source` (interleaved) into `data`'s planes; false for a format it does not write.
    static func deinterleave(
        _ source: UnsafeBufferPointer<Float>, frames: Int, channels: Int,
        into data: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, format: AVSampleFormat
    ) -> Bool {
        guard source.count >= frames * channels else { return false }
        func planes<T>(_ type: T.Type, convert: (Float) -> T) -> Bool {
            for channel in 0..<channels {
                guard let plane = data[channel] else { return false }
                let target = UnsafeMutableRawPointer(plane).assumingMemoryBound(to: T.self)
                for index in 0..<frames { target[index] = convert(source[index * channels + channel]) }
            }
            return true
        }
        func packed<T>(_ type: T.Type, convert: (Float) -> T) -> Bool {
            guard let plane = data[0] else { return false }
            let target = UnsafeMutableRawPointer(plane).assumingMemoryBound(to: T.self)
            for index in 0..<(frames * channels) { target[index] = convert(source[index]) }
            return true
        }
        func int16(_ value: Float) -> Int16 { Int16(max(-32768, min(32767, (value * 32768).rounded()))) }
        func int32(_ value: Float) -> Int32 {
            Int32(max(-2_147_483_648, min(2_147_483_647, (Double(value) * 2_147_483_648).rounded())))
        }
        switch format {
        case AV_SAMPLE_FMT_FLTP: return planes(Float.self) { $0 }
        case AV_SAMPLE_FMT_FLT: return packed(Float.self) { $0 }
        case AV_SAMPLE_FMT_S16P: return planes(Int16.self, convert: int16)
        case AV_SAMPLE_FMT_S16: return packed(Int16.self, convert: int16)
        case AV_SAMPLE_FMT_S32P: return planes(Int32.self, convert: int32)
        case AV_SAMPLE_FMT_S32: return packed(Int32.self, convert: int32)
        default: return false
        }
    }
}
