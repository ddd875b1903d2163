/// `{"type":"started"}`: the stream's first audio after silence was heard.
public struct StartedMessage: BareMessage {
    /// `"started"`.
    public static let type = "started"

    /// Creates the message.
    public init() {}
}
