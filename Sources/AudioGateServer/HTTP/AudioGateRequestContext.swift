import Hummingbird
import NIOCore

/// The request context of every HTTP route.
public struct AudioGateRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connection's NIO channel (capture routes shrink its socket send buffer).
    public let channel: any Channel

    public init(source: Source) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
