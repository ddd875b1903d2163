import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// HTTP/1.1 with WebSocket upgrade, plus an `UpgradeGuard` in front of the upgrader so refused
/// upgrades get their real status and JSON error (it also answers `Expect: 100-continue`).
///
/// Each connection is counted against `--max-connections` as it is accepted; one past the bound
/// gets no HTTP pipeline at all, only a `ConnectionRefusal`.
struct AudioGateChannel: ServerChildChannel {
    /// A served connection, or a refused one (`served` nil) that is answered and closed on its own.
    struct Value: ServerChildChannelValue {
        let served: HTTP1WebSocketUpgradeChannel.Value?
        let channel: any Channel
    }

    let upgrade: HTTP1WebSocketUpgradeChannel
    let check: UpgradeGuard.Check
    let connections: ConnectionLimit

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        guard connections.admit(channel) else {
            logger.debug("refused a connection: \(connections.limit) are open (--max-connections)")
            do {
                try channel.pipeline.syncOperations.addHandler(ConnectionRefusal(connections: connections))
            } catch {
                channel.close(promise: nil)
                return channel.eventLoop.makeFailedFuture(error)
            }
            return channel.eventLoop.makeSucceededFuture(Value(served: nil, channel: channel))
        }
        return upgrade.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let operations = channel.pipeline.syncOperations
            let upgrader = try operations.handler(
                type: NIOTypedHTTPServerUpgradeHandler<HTTP1WebSocketUpgradeChannel.UpgradeResult>.self)
            try operations.addHandler(UpgradeGuard(check: check), position: .before(upgrader))
            return Value(served: value, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        guard let served = value.served else { return }
        let channel = value.channel
        await withGracefulShutdownHandler {
            await upgrade.handle(value: served, logger: logger)
        } onGracefulShutdown: {
            GoingAway.send(on: channel)
        }
    }
}
