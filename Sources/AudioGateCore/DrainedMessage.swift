/// `{"type":"drained"}`: this stream's queue ran empty.
public struct DrainedMessage: BareMessage {
    /// `"drained"`.
    public static let type = "drained"

    /// Creates the message.
    public init() {}
}
