import AudioGateCore

/// One segment to send. For WAV the header is made for the frames written so far and the samples
/// are read from the file, so a segment still being written downloads as a valid WAV too; FLAC and
/// Opus files are sent as they are, up to their last whole frame or page.
struct SegmentDownload: Sendable {
    let path: String
    let format: AudioFormat
    let frames: Int
    /// File name offered to the client.
    let name: String
    var codec = RecordingCodec.wav
    /// FLAC and Opus: the bytes a reader may take now.
    var encodedBytes = 0

    /// Bytes of the whole download.
    var length: Int { codec == .wav ? SegmentFile.headerBytes + frames * format.bytesPerFrame : encodedBytes }

    /// The header for `frames` (none for an encoded file, which carries its own).
    var header: [UInt8] { codec == .wav ? WAVHeader.encode(format: format, dataByteCount: frames * format.bytesPerFrame) : [] }
}
