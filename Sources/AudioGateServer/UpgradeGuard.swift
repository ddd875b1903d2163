import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1

/// Answers refused WebSocket upgrades with the real status and JSON error.
///
/// The WebSocket upgrader can only refuse with an empty 400, which would turn a 403 (foreign
/// Origin), 421 (foreign Host), 401 (token) or a bad query parameter into a puzzle for the client.
/// This handler sits in front of the upgrader, checks the upgrade request with the same rules the
/// HTTP routes use, and answers refusals itself; accepted upgrades pass and it leaves the pipeline.
final class UpgradeGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Returns the error to answer an upgrade request with, or nil to let it through.
    typealias Check = @Sendable (_ path: String, _ query: String?, _ host: String?, _ headers: HTTPFields) -> APIError?

    private let check: Check
    private var discarding = false

    init(check: @escaping Check) {
        self.check = check
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch part {
        case .head(let head):
            guard Self.isUpgrade(head) else {
                context.fireChannelRead(data)
                return
            }
            let (path, query) = Self.split(head.uri)
            if let error = check(path, query, head.headers["host"].first, Self.fields(head.headers)) {
                discarding = true
                refuse(context: context, error: error, version: head.version)
                return
            }
            context.fireChannelRead(data)
            // What follows is the upgrade's end part, then WebSocket frames this handler cannot read.
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        case .body, .end:
            if !discarding { context.fireChannelRead(data) }
        }
    }

    private func refuse(context: ChannelHandlerContext, error: APIError, version: HTTPVersion) {
        let body = ByteBuffer(string: error.json)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        headers.add(name: "Connection", value: "close")
        if error.code == .unauthorized { headers.add(name: "WWW-Authenticate", value: "Bearer realm=\"audiogate\"") }
        let head = HTTPResponseHead(
            version: version, status: HTTPResponseStatus(statusCode: Int(error.status.code)), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            context.close(promise: nil)
        }
    }

    static func isUpgrade(_ head: HTTPRequestHead) -> Bool {
        head.headers["upgrade"].contains { $0.lowercased().contains("websocket") }
    }

    static func split(_ uri: String) -> (path: String, query: String?) {
        guard let mark = uri.firstIndex(of: "?") else { return (uri, nil) }
        return (String(uri[..<mark]), String(uri[uri.index(after: mark)...]))
    }

    static func fields(_ headers: HTTPHeaders) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in headers {
            if name.lowercased() != "host", let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        return fields
    }
}
