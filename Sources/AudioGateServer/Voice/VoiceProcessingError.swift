import CWebRTCAudio

/// A failed call into the WebRTC audio processing module.
public struct VoiceProcessingError: Error, Sendable, CustomStringConvertible {
    /// The module's error codes (AudioProcessing::Error).
    public enum Code: Int32, Sendable {
        case unspecified = -1
        case creationFailed = -2
        case unsupportedComponent = -3
        case unsupportedFunction = -4
        case nullPointer = -5
        case badParameter = -6
        case badSampleRate = -7
        case badDataLength = -8
        case badNumberOfChannels = -9
        case file = -10
        case streamParameterNotSet = -11
        case notEnabled = -12
        case badStreamParameter = -13
    }

    /// What went wrong.
    public let code: Code
    /// The C function that failed.
    public let call: String
    /// The module's own description of the code.
    public let message: String

    /// Wraps a nonzero return value of `call`.
    init(result: Int32, call: String) {
        code = Code(rawValue: result) ?? .unspecified
        self.call = call
        message = String(cString: ag_voice_error_name(result))
    }

    public var description: String { "\(call): \(message) (\(code.rawValue))" }

    /// Every C call goes through here: a nonzero result becomes a typed error.
    static func check(_ result: Int32, _ call: String) throws(VoiceProcessingError) {
        guard result != 0 else { return }
        throw VoiceProcessingError(result: result, call: call)
    }
}
