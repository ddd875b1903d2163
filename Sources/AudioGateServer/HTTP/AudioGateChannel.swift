import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// HTTP/1.1 with WebSocket upgrade, plus an `UpgradeGuard` in front of the upgrader so refused
/// upgrades get their real status and JSON error (it also answers `Expect: 100-continue`).
struct AudioGateChannel: ServerChildChannel {
    typealias Value = HTTP1WebSocketUpgradeChannel.Value

    let upgrade: HTTP1WebSocketUpgradeChannel
    let check: UpgradeGuard.Check

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        upgrade.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let operations = channel.pipeline.syncOperations
            let upgrader = try operations.handler(
                type: NIOTypedHTTPServerUpgradeHandler<HTTP1WebSocketUpgradeChannel.UpgradeResult>.self)
            try operations.addHandler(UpgradeGuard(check: check), position: .before(upgrader))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        let channel = value.channel
        await withGracefulShutdownHandler {
            await upgrade.handle(value: value, logger: logger)
        } onGracefulShutdown: {
            GoingAway.send(on: channel)
        }
    }
}
