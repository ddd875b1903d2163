import CALSA

/// An error from the sound device layer: the failing call, its errno and the ALSA text.
public struct ALSAError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, in terms of the recovery it calls for.
    public enum Code: String, Sendable, Equatable {
        /// -EAGAIN: nothing to do yet; wait and try again.
        case wouldBlock = "would_block"
        /// -EPIPE: overrun or underrun; `snd_pcm_prepare` recovers.
        case xrun
        /// -ESTRPIPE: the system suspended the device; resume, then prepare.
        case suspended
        /// -ENOENT and friends at open time: no such PCM.
        case notFound = "not_found"
        /// The device offers nothing close to what was asked.
        case unsupportedConfiguration = "unsupported_configuration"
        /// Anything else (-ENODEV, -EIO, -EBADFD, ...): the handle is dead; close and reopen.
        case failed
    }

    public let code: Code
    /// The C call that failed, e.g. `snd_pcm_readi`.
    public let call: String
    /// The negative return value (an errno), 0 when the error is not from a C call.
    public let errno: Int32
    /// `snd_strerror` text or a description.
    public let message: String

    public init(code: Code, call: String, errno: Int32 = 0, message: String) {
        self.code = code
        self.call = call
        self.errno = errno
        self.message = message
    }

    /// Builds the error for a negative ALSA return value.
    public init(call: String, result: Int32) {
        let errno = -result
        let code: Code
        switch errno {
        case EAGAIN: code = .wouldBlock
        case EPIPE: code = .xrun
        case ESTRPIPE: code = .suspended
        case ENOENT, ENXIO: code = call == "snd_pcm_open" ? .notFound : .failed
        case EINVAL where call.hasPrefix("snd_pcm_hw_params"): code = .unsupportedConfiguration
        default: code = .failed
        }
        self.init(code: code, call: call, errno: errno, message: String(cString: snd_strerror(result)))
    }

    public var description: String { "\(call): \(message) (\(code.rawValue), errno \(errno))" }
}

/// The one place an ALSA return value is checked: negative becomes a typed `ALSAError`.
@discardableResult
@inline(__always)
func alsaCheck(_ call: String, _ result: Int32) throws(ALSAError) -> Int32 {
    if result < 0 { throw ALSAError(call: call, result: result) }
    return result
}

/// The frame-count variant of `alsaCheck` for calls returning `snd_pcm_sframes_t`.
@discardableResult
@inline(__always)
func alsaCheck(_ call: String, _ result: Int) throws(ALSAError) -> Int {
    if result < 0 { throw ALSAError(call: call, result: Int32(truncatingIfNeeded: result)) }
    return result
}
