/// Converts between packed PCM bytes and Float samples in [-1, 1) without allocating.
///
/// Integer formats scale by 2^(bits-1); encoding rounds to nearest (ties to even), saturates out-of-range values
/// and maps NaN to 0, so no input can wrap around into a full-scale click.
public enum SampleConversion {
    /// Decodes min(source.count / bytesPerSample, destination.count) samples; returns that count.
    @inlinable
    public static func decode(
        _ source: UnsafeRawBufferPointer,
        format: SampleFormat,
        into destination: UnsafeMutableBufferPointer<Float>
    ) -> Int {
        let count = min(source.count / format.bytesPerSample, destination.count)
        guard count > 0, let src = source.baseAddress, let dst = destination.baseAddress else { return 0 }
        switch format {
        case .u8: decodeU8(src, dst, count)
        case .s16le: decodeS16(src, dst, count)
        case .s24le: decodeS24(src, dst, count)
        case .s24le3: decodeS24Packed(src, dst, count)
        case .s32le: decodeS32(src, dst, count)
        case .f32le: decodeF32(src, dst, count)
        case .mulaw: decodeG711(src, dst, count, table: G711.muLawDecodeTable)
        case .alaw: decodeG711(src, dst, count, table: G711.aLawDecodeTable)
        }
        return count
    }

    /// Encodes min(source.count, destination.count / bytesPerSample) samples; returns that count.
    @inlinable
    public static func encode(
        _ source: UnsafeBufferPointer<Float>,
        format: SampleFormat,
        into destination: UnsafeMutableRawBufferPointer
    ) -> Int {
        let count = min(source.count, destination.count / format.bytesPerSample)
        guard count > 0, let src = source.baseAddress, let dst = destination.baseAddress else { return 0 }
        switch format {
        case .u8: encodeU8(src, dst, count)
        case .s16le: encodeS16(src, dst, count)
        case .s24le: encodeS24(src, dst, count)
        case .s24le3: encodeS24Packed(src, dst, count)
        case .s32le: encodeS32(src, dst, count)
        case .f32le: encodeF32(src, dst, count)
        case .mulaw: encodeG711(src, dst, count, table: G711.muLawEncodeTable)
        case .alaw: encodeG711(src, dst, count, table: G711.aLawEncodeTable)
        }
        return count
    }

    /// Decodes a byte array (a trailing partial sample is ignored).
    public static func decode(_ bytes: [UInt8], format: SampleFormat) -> [Float] {
        let count = bytes.count / format.bytesPerSample
        return bytes.withUnsafeBytes { raw in
            [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
                initialized = decode(raw, format: format, into: buffer)
            }
        }
    }

    /// Encodes samples into a new byte array.
    public static func encode(_ samples: [Float], format: SampleFormat) -> [UInt8] {
        let byteCount = samples.count * format.bytesPerSample
        return samples.withUnsafeBufferPointer { floats in
            [UInt8](unsafeUninitializedCapacity: byteCount) { buffer, initialized in
                let written = encode(floats, format: format, into: UnsafeMutableRawBufferPointer(buffer))
                initialized = written * format.bytesPerSample
            }
        }
    }

    // MARK: - Saturation

    /// Scales, saturates and rounds one sample (ties to even) to any Int32 range; NaN becomes 0.
    @inlinable @inline(__always)
    static func quantize(_ sample: Float, scale: Float, min lower: Float, max upper: Float) -> Int32 {
        let scaled = sample * scale
        // Written so that NaN fails both comparisons and lands on the final 0.
        let clamped: Float =
            scaled >= lower ? (scaled <= upper ? scaled : upper) : (scaled < lower ? lower : 0)
        // Adding 1.5 * 2^52 makes the FPU round to an integer held in the low mantissa bits:
        // branch-free and trap-free, so the loops vectorise (Int32(Float) checks its range).
        let bits = (Double(clamped) + 6_755_399_441_055_744).bitPattern &- 0x4338_0000_0000_0000
        return Int32(truncatingIfNeeded: Int64(bitPattern: bits))
    }

    /// `quantize` for ranges within ±2^22, rounding in Float (1.5 * 2^23 trick) for twice the vector width.
    @inlinable @inline(__always)
    static func quantizeSmall(_ sample: Float, scale: Float, min lower: Float, max upper: Float) -> Int32 {
        let scaled = sample * scale
        let clamped: Float =
            scaled >= lower ? (scaled <= upper ? scaled : upper) : (scaled < lower ? lower : 0)
        return Int32(bitPattern: (clamped + 12_582_912).bitPattern &- 0x4B40_0000)
    }

    /// Saturates a float sample to [-1, 1]; NaN becomes 0.
    @inlinable @inline(__always)
    static func sanitize(_ sample: Float) -> Float {
        sample >= -1 ? (sample <= 1 ? sample : 1) : (sample < -1 ? -1 : 0)
    }

    // MARK: - Decoders

    @inlinable
    static func decodeU8(_ src: UnsafeRawPointer, _ dst: UnsafeMutablePointer<Float>, _ count: Int) {
        let bytes = src.assumingMemoryBound(to: UInt8.self)
        for i in 0..<count { dst[i] = Float(Int32(bytes[i]) - 128) * (1 / 128) }
    }

    @inlinable
    static func decodeS16(_ src: UnsafeRawPointer, _ dst: UnsafeMutablePointer<Float>, _ count: Int) {
        for i in 0..<count {
            let raw = src.loadUnaligned(fromByteOffset: i &* 2, as: UInt16.self)
            dst[i] = Float(Int16(bitPattern: UInt16(littleEndian: raw))) * (1 / 32768)
        }
    }

    @inlinable
    static func decodeS24(_ src: UnsafeRawPointer, _ dst: UnsafeMutablePointer<Float>, _ count: Int) {
        for i in 0..<count {
            let raw = UInt32(littleEndian: src.loadUnaligned(fromByteOffset: i &* 4, as: UInt32.self))
            // The container's top byte is undefined in S24_LE: shift it out, then sign-extend.
            let value = Int32(bitPattern: raw << 8) >> 8
            dst[i] = Float(value) * (1 / 8_388_608)
        }
    }

    @inlinable
    static func decodeS24Packed(_ src: UnsafeRawPointer, _ dst: UnsafeMutablePointer<Float>, _ count: Int) {
        let bytes = src.assumingMemoryBound(to: UInt8.self)
        for i in 0..<count {
            let base = i &* 3
            let raw = UInt32(bytes[base]) << 8 | UInt32(bytes[base &+ 1]) << 16 | UInt32(bytes[base &+ 2]) << 24
            dst[i] = Float(Int32(bitPattern: raw) >> 8) * (1 / 8_388_608)
        }
    }

    @inlinable
    static func decodeS32(_ src: UnsafeRawPointer, _ dst: UnsafeMutablePointer<Float>, _ count: Int) {
        for i in 0..<count {
            let raw = UInt32(littleEndian: src.loadUnaligned(fromByteOffset: i &* 4, as: UInt32.self))
            dst[i] = Float(Int32(bitPattern: raw)) * (1 / 2_147_483_648)
        }
    }

    @inlinable
    static func decodeF32(_ src: UnsafeRawPointer, _ dst: UnsafeMutablePointer<Float>, _ count: Int) {
        for i in 0..<count {
            let raw = UInt32(littleEndian: src.loadUnaligned(fromByteOffset: i &* 4, as: UInt32.self))
            // Client floats are untrusted: NaN or inf would poison the mixer and resampler state.
            dst[i] = sanitize(Float(bitPattern: raw))
        }
    }

    @inlinable
    static func decodeG711(_ src: UnsafeRawPointer, _ dst: UnsafeMutablePointer<Float>, _ count: Int, table: [Float]) {
        let bytes = src.assumingMemoryBound(to: UInt8.self)
        table.withUnsafeBufferPointer { levels in
            for i in 0..<count { dst[i] = levels[Int(bytes[i])] }
        }
    }

    // MARK: - Encoders

    /// Rounds to 16 bits as s16le does, then looks the code up by the top 14 bits.
    @inlinable
    static func encodeG711(_ src: UnsafePointer<Float>, _ dst: UnsafeMutableRawPointer, _ count: Int, table: [UInt8]) {
        let bytes = dst.assumingMemoryBound(to: UInt8.self)
        table.withUnsafeBufferPointer { codes in
            for i in 0..<count {
                let value = quantizeSmall(src[i], scale: 32768, min: -32768, max: 32767)
                bytes[i] = codes[Int((value &+ 32768) >> 2)]
            }
        }
    }

    @inlinable
    static func encodeU8(_ src: UnsafePointer<Float>, _ dst: UnsafeMutableRawPointer, _ count: Int) {
        let bytes = dst.assumingMemoryBound(to: UInt8.self)
        for i in 0..<count {
            let value = quantizeSmall(src[i], scale: 128, min: -128, max: 127)
            bytes[i] = UInt8(truncatingIfNeeded: value &+ 128)
        }
    }

    @inlinable
    static func encodeS16(_ src: UnsafePointer<Float>, _ dst: UnsafeMutableRawPointer, _ count: Int) {
        for i in 0..<count {
            let value = Int16(truncatingIfNeeded: quantizeSmall(src[i], scale: 32768, min: -32768, max: 32767))
            dst.storeBytes(of: value.littleEndian, toByteOffset: i &* 2, as: Int16.self)
        }
    }

    @inlinable
    static func encodeS24(_ src: UnsafePointer<Float>, _ dst: UnsafeMutableRawPointer, _ count: Int) {
        for i in 0..<count {
            let value = quantize(src[i], scale: 8_388_608, min: -8_388_608, max: 8_388_607)
            // Sign-extended into the top byte: ALSA ignores it and it keeps s32 readers sane.
            dst.storeBytes(of: value.littleEndian, toByteOffset: i &* 4, as: Int32.self)
        }
    }

    @inlinable
    static func encodeS24Packed(_ src: UnsafePointer<Float>, _ dst: UnsafeMutableRawPointer, _ count: Int) {
        let bytes = dst.assumingMemoryBound(to: UInt8.self)
        for i in 0..<count {
            let value = UInt32(bitPattern: quantize(src[i], scale: 8_388_608, min: -8_388_608, max: 8_388_607))
            let base = i &* 3
            bytes[base] = UInt8(truncatingIfNeeded: value)
            bytes[base &+ 1] = UInt8(truncatingIfNeeded: value >> 8)
            bytes[base &+ 2] = UInt8(truncatingIfNeeded: value >> 16)
        }
    }

    @inlinable
    static func encodeS32(_ src: UnsafePointer<Float>, _ dst: UnsafeMutableRawPointer, _ count: Int) {
        for i in 0..<count {
            // Float cannot hold 2^31 - 1, so the saturation bound must be computed in Double.
            let scaled = Double(src[i]) * 2_147_483_648
            let clamped: Double =
                scaled >= -2_147_483_648
                ? (scaled <= 2_147_483_647 ? scaled : 2_147_483_647)
                : (scaled < -2_147_483_648 ? -2_147_483_648 : 0)
            let bits = (clamped + 6_755_399_441_055_744).bitPattern &- 0x4338_0000_0000_0000
            let value = Int32(truncatingIfNeeded: Int64(bitPattern: bits))
            dst.storeBytes(of: value.littleEndian, toByteOffset: i &* 4, as: Int32.self)
        }
    }

    @inlinable
    static func encodeF32(_ src: UnsafePointer<Float>, _ dst: UnsafeMutableRawPointer, _ count: Int) {
        for i in 0..<count {
            dst.storeBytes(of: sanitize(src[i]).bitPattern.littleEndian, toByteOffset: i &* 4, as: UInt32.self)
        }
    }
}
