/// Whole-file WAV helpers over interleaved Float samples.
public enum WAVFile {
    /// A complete WAV file holding `samples` (interleaved) in `format`; s24le is stored as packed s24le3.
    ///
    /// A trailing partial frame is dropped.
    public static func write(samples: [Float], format: AudioFormat) -> [UInt8] {
        let sampleFormat = format.sampleFormat == .s24le ? SampleFormat.s24le3 : format.sampleFormat
        let channels = max(format.channels, 1)
        let sampleCount = samples.count / channels * channels
        let dataBytes = sampleCount * sampleFormat.bytesPerSample
        var file = WAVHeader.encode(format: format, dataByteCount: dataBytes)
        let headerCount = file.count
        file += repeatElement(0, count: dataBytes)
        file.withUnsafeMutableBytes { raw in
            samples.withUnsafeBufferPointer { floats in
                let body = UnsafeMutableRawBufferPointer(rebasing: raw[headerCount...])
                _ = SampleConversion.encode(
                    UnsafeBufferPointer(rebasing: floats[0..<sampleCount]), format: sampleFormat, into: body)
            }
        }
        return file
    }

    /// Reads a whole WAV file into interleaved Float samples.
    ///
    /// A data chunk longer than the bytes present (an unfinished or streamed file) yields the whole
    /// frames that are present.
    public static func read(_ bytes: [UInt8]) throws(WAVError) -> (format: AudioFormat, samples: [Float]) {
        let header = try WAVHeader.parse(bytes)
        let available = max(0, bytes.count - header.dataOffset)
        let declared = header.dataByteCount.map { min($0, available) } ?? available
        let frameBytes = header.format.bytesPerFrame
        let usable = declared / frameBytes * frameBytes
        let samples = bytes.withUnsafeBytes { raw in
            let data = UnsafeRawBufferPointer(rebasing: raw[header.dataOffset..<(header.dataOffset + usable)])
            let count = usable / header.format.sampleFormat.bytesPerSample
            return [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
                initialized = SampleConversion.decode(data, format: header.format.sampleFormat, into: buffer)
            }
        }
        return (header.format, samples)
    }
}
