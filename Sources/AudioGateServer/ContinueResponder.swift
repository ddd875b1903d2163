import NIOCore
import NIOHTTP1

/// Answers `Expect: 100-continue` as soon as the request head arrives.
///
/// curl sends it for `-T` uploads and large bodies, then waits a second for the interim answer
/// before sending anything: a piped playback would start a second late. A request the security
/// policy or its route's parameters refuse gets no 100; its head travels on without the
/// expectation, so the router answers the final error at once and the body is never sent.
final class ContinueResponder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let check: UpgradeGuard.Check

    init(check: @escaping UpgradeGuard.Check) {
        self.check = check
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data), Self.expectsContinue(head) else {
            context.fireChannelRead(data)
            return
        }
        head.headers.remove(name: "expect")
        let (path, query) = UpgradeGuard.split(head.uri)
        if check(path, query, head.headers["host"].first, UpgradeGuard.fields(head.headers)) == nil {
            let interim = HTTPResponseHead(version: head.version, status: .continue)
            context.writeAndFlush(wrapOutboundOut(.head(interim)), promise: nil)
        }
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    /// HTTP/1.1 requests that wait for an interim answer before sending their body.
    static func expectsContinue(_ head: HTTPRequestHead) -> Bool {
        head.version.major == 1 && head.version.minor >= 1
            && head.headers["expect"].contains { $0.lowercased() == "100-continue" }
    }
}
