import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1

/// Gives every request head its canonical path; lets refused WebSocket upgrades get the real status
/// and JSON error; answers `100 Continue`.
///
/// It sees each request head before anything else does and rewrites its path to the one spelling
/// (`RoutePath.canonical`) that the router, the security rules and the upgrader then all read, so no
/// spelling reaches a route around its rule.
///
/// The WebSocket upgrader can only refuse with an empty 400, which would turn a 403 (foreign
/// Origin), 421 (foreign Host), 401 (token) or a bad query parameter into a puzzle for the client.
/// This handler sits in front of the upgrader and checks the upgrade request with the same rules
/// the HTTP routes use. A request that would be refused loses its Upgrade header, so it travels the
/// plain HTTP path, where the router refuses it with the same error as any other request; accepted
/// upgrades pass untouched and the handler leaves the pipeline.
///
/// Standing right behind the HTTP decoder, it also answers requests the decoder cannot parse
/// (oversized headers, garbage): the upgrading pipeline has no error handling of its own, and
/// such a connection would otherwise hang until the client gives up.
///
/// And it answers `Expect: 100-continue` as soon as the head arrives: curl sends it for `-T`
/// uploads and large bodies, then waits a second before sending anything, so a piped playback
/// would start a second late. A request the same rules refuse gets no 100: its head travels on
/// without the expectation, the router answers the final error at once and the body is never sent.
final class UpgradeGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Returns why the request would be refused (it is then refused on the plain HTTP path), or nil to let it upgrade.
    typealias Check = @Sendable (
        _ method: HTTPRequest.Method, _ path: String, _ query: String?, _ host: String?, _ headers: HTTPFields
    ) -> (any Error)?

    private let check: Check

    init(check: @escaping Check) {
        self.check = check
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch part {
        case .head(var head):
            let (path, query) = Self.split(head.uri)
            head.uri = RoutePath.canonical(path) + (query.map { "?" + $0 } ?? "")
            guard Self.isUpgrade(head) else {
                guard Self.expectsContinue(head) else {
                    context.fireChannelRead(wrapInboundOut(.head(head)))
                    return
                }
                head.headers.remove(name: "expect")
                if refusal(head) == nil {
                    let interim = HTTPResponseHead(version: head.version, status: .continue)
                    context.writeAndFlush(wrapOutboundOut(.head(interim)), promise: nil)
                }
                context.fireChannelRead(wrapInboundOut(.head(head)))
                return
            }
            if refusal(head) != nil {
                var plain = head
                plain.headers.remove(name: "upgrade")
                plain.headers.replaceOrAdd(name: "connection", value: "close")
                context.fireChannelRead(wrapInboundOut(.head(plain)))
                return
            }
            context.fireChannelRead(wrapInboundOut(.head(head)))
            // What follows is the upgrade's end part, then WebSocket frames this handler cannot read.
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        case .body, .end:
            context.fireChannelRead(data)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        let refusal =
            parserError == .headerOverflow
            ? APIError(.tooLarge, "the request headers are larger than the server accepts (--max-header-bytes)")
            : APIError(.badRequest, "not a valid HTTP request")
        let body = ByteBuffer(string: refusal.json)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        headers.add(name: "Connection", value: "close")
        let head = HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: Int(refusal.status.code)), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    private func refusal(_ head: HTTPRequestHead) -> APIError? {
        guard let method = HTTPRequest.Method(head.method.rawValue) else { return APIError(.badRequest, "not a valid HTTP method") }
        let (path, query) = Self.split(head.uri)
        return check(method, path, query, head.headers["host"].first, Self.fields(head.headers)).map(APIError.init(mapping:))
    }

    /// HTTP/1.1 requests that wait for an interim answer before sending their body.
    static func expectsContinue(_ head: HTTPRequestHead) -> Bool {
        head.version.major == 1 && head.version.minor >= 1
            && head.headers["expect"].contains { $0.lowercased() == "100-continue" }
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
