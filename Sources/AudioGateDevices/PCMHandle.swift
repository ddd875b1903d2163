import AudioGateCore
import CALSA

/// An open ALSA PCM (`snd_pcm_t *`), closed when the handle is released.
///
/// Opened non-blocking: the device loops wait with `snd_pcm_wait` so a stop request or a hung
/// sound server never leaves a thread stuck inside ALSA.
public final class PCMHandle: PCMStream {
    /// The ALSA PCM name it was opened by.
    public let name: String
    /// Capture or playback.
    public let direction: PCMDirection
    /// What the card accepted.
    public let negotiated: NegotiatedFormat
    public let datesByPointer: Bool
    private let pcm: OpaquePointer
    /// Kept for `setWakeThreshold`, so changing it later allocates nothing.
    private let software: OpaquePointer

    /// Opens `name` and negotiates the hardware format closest to `request`.
    public init(name: String, direction: PCMDirection, request: PCMRequest) throws(ALSAError) {
        audiogate_alsa_quiet()
        var handle: OpaquePointer?
        let stream = direction == .capture ? SND_PCM_STREAM_CAPTURE : SND_PCM_STREAM_PLAYBACK
        try alsaCheck("snd_pcm_open", snd_pcm_open(&handle, name, stream, SND_PCM_NONBLOCK))
        guard let handle else {
            throw ALSAError(code: .failed, call: "snd_pcm_open", message: "no handle returned")
        }
        guard let software = audiogate_sw_params_new() else {
            snd_pcm_close(handle)
            throw ALSAError(code: .failed, call: "snd_pcm_sw_params_malloc", message: "out of memory")
        }
        do {
            self.negotiated = try Self.configure(handle, direction: direction, request: request)
            try alsaCheck("snd_pcm_sw_params_current", snd_pcm_sw_params_current(handle, software))
        } catch {
            snd_pcm_sw_params_free(software)
            snd_pcm_close(handle)
            throw error
        }
        self.software = software
        self.pcm = handle
        datesByPointer = snd_pcm_type(handle) == SND_PCM_TYPE_IOPLUG
        self.name = name
        self.direction = direction
    }

    deinit {
        snd_pcm_close(pcm)
        snd_pcm_sw_params_free(software)
    }

    public func start() throws(ALSAError) {
        try alsaCheck("snd_pcm_start", snd_pcm_start(pcm))
    }

    public func wait(timeoutMilliseconds: Int32) throws(ALSAError) -> Bool {
        try alsaCheck("snd_pcm_wait", snd_pcm_wait(pcm, timeoutMilliseconds)) > 0
    }

    public func read(into buffer: UnsafeMutableRawPointer, frames: Int) throws(ALSAError) -> Int {
        let result = snd_pcm_readi(pcm, buffer, snd_pcm_uframes_t(frames))
        if result == -Int(EAGAIN) { return 0 }
        return try alsaCheck("snd_pcm_readi", result)
    }

    public func write(from buffer: UnsafeRawPointer, frames: Int) throws(ALSAError) -> Int {
        let result = snd_pcm_writei(pcm, buffer, snd_pcm_uframes_t(frames))
        if result == -Int(EAGAIN) { return 0 }
        return try alsaCheck("snd_pcm_writei", result)
    }

    public func available() throws(ALSAError) -> Int {
        try alsaCheck("snd_pcm_avail_update", snd_pcm_avail_update(pcm))
    }

    public func delay() throws(ALSAError) -> Int {
        var frames: snd_pcm_sframes_t = 0
        try alsaCheck("snd_pcm_delay", snd_pcm_delay(pcm, &frames))
        return max(0, frames)
    }

    public func prepare() throws(ALSAError) {
        try alsaCheck("snd_pcm_prepare", snd_pcm_prepare(pcm))
    }

    public func resume() throws(ALSAError) {
        try alsaCheck("snd_pcm_resume", snd_pcm_resume(pcm))
    }

    public func setWakeThreshold(frames: Int) throws(ALSAError) {
        try alsaCheck(
            "snd_pcm_sw_params_set_avail_min",
            snd_pcm_sw_params_set_avail_min(pcm, software, snd_pcm_uframes_t(max(1, frames))))
        try alsaCheck("snd_pcm_sw_params", snd_pcm_sw_params(pcm, software))
    }

    public func stop() throws(ALSAError) {
        try alsaCheck("snd_pcm_drop", snd_pcm_drop(pcm))
    }
}
