import AudioGateCore

/// One segment to send: the header is made for the frames written so far, the samples are read
/// from the file, so a segment still being written downloads as a valid WAV too.
struct SegmentDownload: Sendable {
    let path: String
    let format: AudioFormat
    let frames: Int
    /// File name offered to the client.
    let name: String

    /// Bytes of the whole WAV.
    var length: Int { SegmentFile.headerBytes + frames * format.bytesPerFrame }

    /// The header for `frames`.
    var header: [UInt8] { WAVHeader.encode(format: format, dataByteCount: frames * format.bytesPerFrame) }
}
