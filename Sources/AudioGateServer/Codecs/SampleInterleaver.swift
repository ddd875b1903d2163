import CFFmpeg

/// Converts libav's sample layouts (planar or packed, integer or float) to interleaved float.
enum SampleInterleaver {
    /// Writes `frames * channels` floats to `target`; false for a sample format it does not know.
    static func interleave(
        _ data: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, format: Int32, frames: Int, channels: Int,
        into target: UnsafeMutableBufferPointer<Float>
    ) -> Bool {
        guard target.count >= frames * channels else { return false }
        func planes<T>(_ type: T.Type, scale: (T) -> Float) -> Bool {
            for channel in 0..<channels {
                guard let plane = data[channel] else { return false }
                let source = UnsafeRawPointer(plane).assumingMemoryBound(to: T.self)
                for index in 0..<frames { target[index * channels + channel] = scale(source[index]) }
            }
            return true
        }
        func packed<T>(_ type: T.Type, scale: (T) -> Float) -> Bool {
            guard let plane = data[0] else { return false }
            let source = UnsafeRawPointer(plane).assumingMemoryBound(to: T.self)
            for index in 0..<(frames * channels) { target[index] = scale(source[index]) }
            return true
        }
        switch format {
        case AV_SAMPLE_FMT_FLTP.rawValue: return planes(Float.self) { $0 }
        case AV_SAMPLE_FMT_FLT.rawValue: return packed(Float.self) { $0 }
        case AV_SAMPLE_FMT_S16P.rawValue: return planes(Int16.self) { Float($0) / 32768 }
        case AV_SAMPLE_FMT_S16.rawValue: return packed(Int16.self) { Float($0) / 32768 }
        case AV_SAMPLE_FMT_S32P.rawValue: return planes(Int32.self) { Float($0) / 2_147_483_648 }
        case AV_SAMPLE_FMT_S32.rawValue: return packed(Int32.self) { Float($0) / 2_147_483_648 }
        case AV_SAMPLE_FMT_DBLP.rawValue: return planes(Double.self) { Float($0) }
        case AV_SAMPLE_FMT_DBL.rawValue: return packed(Double.self) { Float($0) }
        case AV_SAMPLE_FMT_U8P.rawValue: return planes(UInt8.self) { (Float($0) - 128) / 128 }
        case AV_SAMPLE_FMT_U8.rawValue: return packed(UInt8.self) { (Float($0) - 128) / 128 }
        default: return false
        }
    }
}
