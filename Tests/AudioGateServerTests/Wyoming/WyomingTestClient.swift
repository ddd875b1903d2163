import AudioGateServer
import AudioGateTestSupport
import NIOCore
import NIOPosix

/// A Wyoming client over TCP framed by the server's own decoder and encoder.
struct WyomingTestClient {
    let channel: NIOAsyncChannel<WyomingEvent, WyomingEvent>

    /// Connects to 127.0.0.1:`port`.
    static func connect(port: Int) async throws -> WyomingTestClient {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    // The server's answers (audio) are trusted here: only the size limit matters.
                    var limits = WyomingLimits()
                    limits.maxPayloadBytes = 1 << 22
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(WyomingFrameDecoder(limits: limits)))
                    try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(WyomingFrameEncoder()))
                    return try NIOAsyncChannel<WyomingEvent, WyomingEvent>(wrappingChannelSynchronously: channel)
                }
            }
        return WyomingTestClient(channel: channel)
    }

    /// Raw bytes over TCP to 127.0.0.1:`port`, for hostile input.
    static func raw(port: Int) async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
    }

    /// A bare TCP channel to 127.0.0.1:`port` that is left open while a test goes on.
    static func plain(port: Int) async throws -> any Channel {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
    }

    /// Waits for the service's port (bound once the application runs).
    static func port(of service: WyomingService) async throws -> Int {
        _ = await Poll.until(seconds: 10) { service.port != nil }
        guard let port = service.port else { throw WyomingTestFailure("the \(service.role) service never bound") }
        return port
    }
}

/// A failed expectation about a Wyoming exchange.
struct WyomingTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
