/// A segment file being written: WAV (`SegmentFile`) or encoded (`EncodedSegmentFile`).
///
/// Used by one `RecordingWriter` at a time, on the thread pool (blocking I/O).
protocol SegmentWriting: AnyObject {
    /// Bytes the file takes on disk now.
    var fileBytes: Int { get }
    /// Bytes from the start a download may take now: whole frames or pages of an encoded file
    /// (nil for WAV, whose header is made for the frames counted).
    var readableBytes: Int? { get }
    /// Appends whole frames of PCM in the recording's format.
    func append(_ bytes: UnsafeRawBufferPointer) throws(RecordingError)
    /// Makes what was written so far readable after a crash (at least once per second of audio).
    func checkpoint() throws(RecordingError)
    /// Makes the file final and durable, then closes it.
    func finish() throws(RecordingError)
}
