/// Thrown by a real-time test body when a measured signal is wrong, so `RealTime.retryingOnSteal` can retry it.
public struct SignalCheckFailure: Error, Sendable, CustomStringConvertible {
    /// What was wrong.
    public var message: String

    /// Creates a failure.
    public init(_ message: String) { self.message = message }

    /// Throws a failure with `message` unless `condition` holds.
    public static func require(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw SignalCheckFailure(message()) }
    }

    /// The message.
    public var description: String { message }
}
