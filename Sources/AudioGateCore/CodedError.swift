/// The codes of one kind of error: each raw value is the machine-readable code clients and logs see.
public protocol ErrorCode: RawRepresentable<String>, Sendable, Hashable {}

/// An error of one feature: a code from that feature's own enum and a sentence.
///
/// Every error with nothing more to carry has this one shape: a feature names its type
/// (`typealias WAVError = CodedError<WAVErrorCode>`) and extends it with what is its own.
public struct CodedError<Codes: ErrorCode>: Error, Sendable, Equatable, CustomStringConvertible {
    /// The feature's code enum.
    public typealias Code = Codes

    /// Machine-readable reason.
    public let code: Code
    /// Human-readable sentence.
    public let message: String

    /// An error with its code and a sentence.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}

/// The codes of an error that clients hear about: each says which failure the HTTP layer answers.
public protocol ResponseCode: ErrorCode {
    /// The failure as clients see it in `error.code`.
    var reason: FailureReason { get }
}

/// The codes of a feature that refuses bad query parameters.
public protocol ParameterCode: ResponseCode {
    /// A query parameter is not one the feature takes, or does not fit the others.
    static var badParameter: Self { get }
}

extension CodedError: ResponseError where Codes: ResponseCode {
    public var reason: FailureReason { code.reason }
}

extension CodedError where Codes: ParameterCode {
    /// A bad query parameter, naming it and what is allowed.
    public static func parameter(_ name: String, _ allowed: String) -> Self {
        Self(.badParameter, FailureReason.parameterMessage(name, allowed))
    }
}
