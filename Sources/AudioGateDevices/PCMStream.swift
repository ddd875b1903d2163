import AudioGateCore

/// The device loops' view of an open PCM: an ALSA handle or the built-in loopback card.
///
/// Errors are `ALSAError`s so that one recovery policy serves both.
public protocol PCMStream: AnyObject {
    /// The format the stream runs at.
    var negotiated: NegotiatedFormat { get }
    /// Starts a prepared capture stream.
    func start() throws(ALSAError)
    /// Waits up to `timeoutMilliseconds` for the stream to be ready; false on timeout.
    func wait(timeoutMilliseconds: Int32) throws(ALSAError) -> Bool
    /// Reads up to `frames` interleaved frames in the hardware format; 0 when nothing is ready.
    func read(into buffer: UnsafeMutableRawPointer, frames: Int) throws(ALSAError) -> Int
    /// Writes up to `frames` interleaved frames in the hardware format; 0 when there is no room.
    func write(from buffer: UnsafeRawPointer, frames: Int) throws(ALSAError) -> Int
    /// Frames that can be written (playback) or read (capture) now.
    func available() throws(ALSAError) -> Int
    /// Frames between the application pointer and the speaker or microphone.
    func delay() throws(ALSAError) -> Int
    /// Whether the buffer pointer dates the stream better than `delay`: an ALSA I/O plugin (a sound
    /// server's `pulse` device) reports as delay its server's interpolated estimate.
    var datesByPointer: Bool { get }
    /// Recovers from an xrun.
    func prepare() throws(ALSAError)
    /// Resumes after a suspend; throws `.wouldBlock` while the device is still waking.
    func resume() throws(ALSAError)
    /// Makes `wait` return only once `frames` can be read or written (ALSA's `avail_min`), so a
    /// loop that takes several periods at a time wakes once for them.
    func setWakeThreshold(frames: Int) throws(ALSAError)
    /// Stops the stream at once, dropping what is buffered; `prepare` (and `start` for capture) restarts it.
    func stop() throws(ALSAError)
}
