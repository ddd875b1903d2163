/// A resampler failure: rates or channels it cannot take, or a speexdsp error.
public struct ResamplerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why the resampler failed.
    public enum Code: String, Sendable {
        case invalidRatio = "invalid_ratio"
        case invalidChannels = "invalid_channels"
        /// speexdsp refused; the message names the call and gives speexdsp's reason.
        case library
    }

    public let code: Code
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
