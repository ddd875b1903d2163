import AudioGateCore
@testable import AudioGateServer
import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import HummingbirdWSTesting
import NIOCore
import NIOPosix
import Testing

/// Compressed capture clients leaving at every stage of their connection: each must give back its
/// client slot, and the last one of a setting its shared encoder and the encoder's capture group.
@Suite("compressed capture clients leaving", .serialized)
struct CaptureEncodedLeaveTests {
    /// Where a client goes away.
    enum Stage: String, CaseIterable, CustomStringConvertible, Sendable {
        /// Closes (with the close handshake) before reading anything.
        case closeBeforeStart
        /// Closes after the `start` message.
        case closeAfterStart
        /// Closes after the first packet.
        case closeAfterPacket
        /// Fails in its handler after the first packet (the client closes with an error code).
        case failAfterPacket
        /// Its task is cancelled while it waits for packets.
        case cancelled
        /// Drops the TCP connection, without a close frame, before the `start` message.
        case dropBeforeStart
        /// Drops the TCP connection after the first packets.
        case dropAfterPacket
        var description: String { rawValue }
    }

    /// Connections per stage, `concurrent` at a time: enough to meet the encoder starting and stopping.
    static let connections = 24
    static let concurrent = 4

    /// Whether every slot, shared encoder and capture group is gone within a few seconds.
    static func released(_ hub: CaptureHub) async -> Bool {
        // The test's own wait for the server to settle; the server releases on the client's close.
        await Poll.until(seconds: 5) {
            hub.encoders.listenerCount == 0 && hub.encoders.count == 0 && hub.registry.withLock { $0.groups.isEmpty }
        } != nil
    }

    static func state(_ hub: CaptureHub) -> String {
        "slots \(hub.encoders.listenerCount), encoders \(hub.encoders.count), groups \(hub.registry.withLock { $0.groups.count })"
    }

    @Test("a format=opus WebSocket leaving at each stage gives back its slot, encoder and group", arguments: Stage.allCases)
    func webSocket(_ stage: Stage) async throws {
        let (server, app) = TestServer.make()
        try await app.test(.live) { client in
            let hub = server.engine.captureHub
            let port = try #require(client.port)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<Self.concurrent {
                    group.addTask {
                        for _ in stride(from: worker, to: Self.connections, by: Self.concurrent) {
                            try await Self.run(stage, client: client, port: port, hub: hub)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(await Self.released(hub), "\(stage): \(Self.state(hub))")
        }
    }

    @Test("an HTTP stream closed after its headers or its first pieces gives back its slot, encoder and group",
          arguments: ["container=ogg", "container=ogg&seconds=30", "container=webm", "container=flac", "container=mp3"])
    func http(_ query: String) async throws {
        let (server, app) = TestServer.make()
        try await app.test(.live) { client in
            let hub = server.engine.captureHub
            let port = try #require(client.port)
            let request = "GET /v1/capture?\(query) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            for index in 0..<Self.connections / 2 {
                // Headers only, or into the audio (its first pieces follow the stream headers).
                let wanted = index.isMultiple(of: 2) ? 1 : 600
                let bytes = try await RawConnection.exchange(port: port, request: request) { $0.count >= wanted }
                #expect(String(decoding: bytes.prefix(15), as: UTF8.self) == "HTTP/1.1 200 OK")
            }
            #expect(await Self.released(hub), "\(query): \(Self.state(hub))")
        }
    }

    static func run(_ stage: Stage, client: some TestClientProtocol, port: Int, hub: CaptureHub) async throws {
        let path = "/v1/capture?format=opus"
        switch stage {
        case .closeBeforeStart:
            try await client.ws(path) { _, _, _ in }
        case .closeAfterStart, .closeAfterPacket:
            try await client.ws(path) { inbound, _, _ in
                for try await message in inbound.messages(maxSize: 1 << 16) {
                    if stage == .closeAfterStart || !CaptureClient.isStart(message) { break }
                }
            }
        case .failAfterPacket:
            await #expect(throws: (any Error).self) {
                try await client.ws(path) { inbound, _, _ in
                    for try await message in inbound.messages(maxSize: 1 << 16) where !CaptureClient.isStart(message) {
                        throw CancellationError()
                    }
                }
            }
        case .cancelled:
            let joined = Locked(false)
            let task = Task {
                try await client.ws(path) { inbound, _, _ in
                    for try await message in inbound.messages(maxSize: 1 << 16) where !CaptureClient.isStart(message) {
                        joined.withLock { $0 = true }
                    }
                }
            }
            _ = await Poll.until(seconds: 5) { joined.value }
            task.cancel()
            _ = await task.result
        case .dropBeforeStart, .dropAfterPacket:
            let request = """
                GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n
                """
            // The 101 alone, or the 101, `start` and a few packets.
            let wanted = stage == .dropBeforeStart ? 1 : 400
            let bytes = try await RawConnection.exchange(port: port, request: request) { $0.count >= wanted }
            #expect(String(decoding: bytes.prefix(12), as: UTF8.self) == "HTTP/1.1 101")
        }
    }
}

/// One request over a bare TCP connection, closed (without any goodbye) once the answer so far satisfies `done`.
enum RawConnection {
    static func exchange(port: Int, request: String, until done: @escaping @Sendable ([UInt8]) -> Bool) async throws -> [UInt8] {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: request))
            var received: [UInt8] = []
            for try await buffer in inbound {
                received += Array(buffer: buffer)
                if done(received) { break }
            }
            return received
        }
    }
}
