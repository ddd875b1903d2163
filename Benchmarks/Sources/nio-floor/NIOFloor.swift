import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// The floor under one WebSocket client's steady work on swift-nio, with no audio logic: what the
/// server's networking stack costs on its own, for the per-client rows of `make bench`.
///
///     nio-floor capture PORT    a timer thread woken every 20 ms hands a ready-made 644-byte binary
///                               frame (a 20 ms chunk of 16 kHz mono s16le) to each event loop with
///                               clients, one task per loop, which writes and flushes it to each
///     nio-floor playback PORT   reads every frame a client sends (decoded and unmasked) and drops it
///
/// Both are the server's own paths with the audio taken out: the capture thread's hand-off, the
/// event loop's write from the frame encoder's context, the playback frame handler after the decoder.
@main
struct NIOFloor {
    static func main() throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 3, let port = Int(arguments[2]), ["capture", "playback"].contains(arguments[1]) else {
            print("usage: nio-floor capture|playback PORT")
            exit(2)
        }
        let capture = arguments[1] == "capture"
        let clients = CaptureClients()
        let group = MultiThreadedEventLoopGroup.singleton
        let upgrader = NIOWebSocketServerUpgrader(
            shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if capture {
                        let encoder = try pipeline.context(handlerType: WebSocketFrameEncoder.self)
                        clients.add(CaptureClients.Member(channel: channel, encoder: encoder))
                        channel.closeFuture.whenComplete { _ in clients.remove(channel) }
                    } else {
                        try pipeline.addHandler(DropFrames())
                    }
                }
            })
        let server = try ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline(
                    withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
            }
            .bind(host: "127.0.0.1", port: port)
            .wait()
        print("listening on \(port)")
        fflush(nil)
        if capture {
            tick(clients)
        }
        try server.closeFuture.wait()
    }

    /// Wakes every 20 ms, as the capture thread does, and posts the chunk to each event loop with clients.
    static func tick(_ clients: CaptureClients) -> Never {
        var frame = ByteBuffer()
        frame.writeBytes([0x82, 126, 0x02, 0x80])
        frame.writeRepeatingByte(0, count: 640)
        let chunk = frame
        var next = timespec()
        clock_gettime(CLOCK_MONOTONIC, &next)
        while true {
            next.tv_nsec += 20_000_000
            if next.tv_nsec >= 1_000_000_000 {
                next.tv_nsec -= 1_000_000_000
                next.tv_sec += 1
            }
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nil)
            for (loop, members) in clients.byLoop() {
                loop.execute {
                    for member in members {
                        member.encoder.value.write(NIOAny(chunk), promise: nil)
                        member.encoder.value.flush()
                    }
                }
            }
        }
    }
}
