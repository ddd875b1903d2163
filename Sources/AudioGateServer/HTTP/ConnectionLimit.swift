import NIOCore
import Synchronization

/// Open connections, counted as they are accepted, against `--max-connections`: past the bound a
/// connection is answered and closed at once, so file descriptors are left for the sound card,
/// recordings and the clients already connected.
public final class ConnectionLimit: Sendable {
    /// Most connections open at once.
    public let limit: Int
    private let open = Atomic<Int>(0)
    private let lingering = Atomic<Int>(0)

    /// Most refused connections left open to read their answer at once: a flood of connections
    /// must not hold the descriptors the bound keeps free, so past this they are closed at once.
    static let maximumLingering = 64

    /// The refusal, as the bytes of a whole HTTP response: it is written before anything of the
    /// request is parsed.
    let refusal: ByteBuffer

    public init(limit: Int) {
        self.limit = limit
        let body = APIError(.tooManyConnections, "the server has \(limit) connections open (--max-connections); try again shortly").json
        refusal = ByteBuffer(
            string: "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Connection: close\r\nRetry-After: 1\r\n\r\n" + body)
    }

    /// Connections open now.
    public var count: Int { open.load(ordering: .relaxed) }

    /// Counts `channel` until it closes; false, and not counted, when `limit` connections are open.
    func admit(_ channel: any Channel) -> Bool {
        guard open.wrappingAdd(1, ordering: .relaxed).newValue <= limit else {
            open.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        channel.closeFuture.whenComplete { [self] _ in open.wrappingSubtract(1, ordering: .relaxed) }
        return true
    }

    /// Counts a refused connection that stays open until `channel` closes, to let its client read
    /// the answer; false when `maximumLingering` already do.
    func linger(_ channel: any Channel) -> Bool {
        guard lingering.wrappingAdd(1, ordering: .relaxed).newValue <= Self.maximumLingering else {
            lingering.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        channel.closeFuture.whenComplete { [self] _ in lingering.wrappingSubtract(1, ordering: .relaxed) }
        return true
    }
}
