#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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

/// Creates the file at `path` (never replacing one) and runs `start` with its descriptor; when
/// `start` fails, the file is closed and removed so no half-made segment is left behind.
func createSegmentFile(
    at path: String, _ start: (Int32) throws(RecordingError) -> Void
) throws(RecordingError) -> Int32 {
    let descriptor = try RecordingFile.open(path, O_WRONLY | O_CREAT | O_EXCL)
    do {
        try start(descriptor)
    } catch {
        close(descriptor)
        try? RecordingFile.remove(path)
        throw error
    }
    return descriptor
}
