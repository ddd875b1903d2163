import AudioGateCore
import Crypto
import Foundation
import HummingbirdWSClient
import NIOCore
import Synchronization

/// One WebSocket connection to a Sendspin server: the cleartext init and Noise handshake, then
/// the encrypted conversation. The reader (this task) handles what arrives; one writer task owns
/// the sending cipher, so messages leave in nonce order; a timer task starts the time bursts.
struct SendspinConnection {
    /// Longest wait for each step of bringing the connection up (init, handshake, hello, activation).
    static let bringUpTimeout: Duration = .seconds(30)

    let client: SendspinClient
    let identity: SendspinIdentity
    /// The address of a server that dialed the player (nil: the player dialed).
    var peer: String? = nil

    /// What the reader and the other tasks share.
    final class Watch: Sendable {
        /// Why a task other than the reader ended the connection.
        let failure = Mutex<SendspinError?>(nil)
        /// The server has activated the connection: time bursts may start.
        let activated = Atomic<Bool>(false)
        /// Why the connection gave up on its server: what a caller reports, whatever the cancelled
        /// WebSocket task throws.
        let abandoned = Mutex<SendspinError?>(nil)
    }

    /// What the connection's tasks share.
    let watch = Watch()

    /// What the writer sends.
    enum Outgoing: Sendable {
        /// The sending cipher, first, once the handshake is done.
        case cipher(NoiseCipherState)
        case json(String)
        /// Noise message 2 of a re-handshake under the old key, then the new key: one item, so
        /// that nothing queued meanwhile leaves between them.
        case rekey(String, NoiseCipherState)
        /// A `client/time`, stamped as it is encrypted.
        case time
        /// Close the socket once what came before is sent.
        case close
    }

    /// Runs the connection to its end. One that fails sends its close and stops reading at once:
    /// the WebSocket library would otherwise read and drop what the server still sends until its
    /// close or a timeout, and a flooding server keeps an event loop decoding that backlog. Cancelling
    /// this task is what shuts the socket's input, so a caller runs each connection in a task of its own.
    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        do {
            try await converse(inbound: inbound, outbound: outbound)
        } catch let error as SendspinError {
            try? await outbound.close(.unexpectedServerError, reason: nil)
            watch.abandoned.withLock { $0 = error }
            withUnsafeCurrentTask { $0?.cancel() }
            throw error
        }
    }

    private func converse(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        let (queue, sender) = AsyncStream.makeStream(of: Outgoing.self)
        let client = client
        let generation = client.nextGeneration()
        defer { client.release(generation) }
        // Goodbye, then the close: the reader sees the socket end and throws why.
        let leave: @Sendable (SendspinError) -> Void = { error in
            watch.failure.withLock { $0 = $0 ?? error }
            sender.yield(.json(SendspinOutbound.goodbye("another_server")))
            sender.yield(.close)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            // A failure off the reader closes the socket; the reader then sees the end and throws it.
            @Sendable func fail(_ error: SendspinError) async {
                watch.failure.withLock { $0 = $0 ?? error }
                try? await outbound.close(.unexpectedServerError, reason: nil)
            }
            group.addTask {
                do throws(SendspinError) {
                    try await Self.write(queue, to: outbound)
                } catch {
                    await fail(error)
                }
            }
            group.addTask {
                let start = MonotonicClock.nowNanoseconds()
                while !Task.isCancelled {
                    try await Task.sleep(for: client.clock.interval)
                    let now = MonotonicClock.nowNanoseconds()
                    guard watch.activated.load(ordering: .relaxed), client.holds(generation) else {
                        if now - start > UInt64(Self.bringUpTimeout.components.seconds) * 1_000_000_000 {
                            return await fail(SendspinError(.timeout, "no server/activate within 30 s of connecting"))
                        }
                        continue
                    }
                    switch client.clock.beginBurst(now: now) {
                    case .send: sender.yield(.time)
                    case .busy: break
                    case .timedOut: return await fail(SendspinError(.timeout, "no answer to client/time within 5 s"))
                    }
                }
            }
            defer {
                sender.finish()
                group.cancelAll()
            }
            var messages = inbound.messages(maxSize: NoiseHandshake.maximumMessageBytes).makeAsyncIterator()
            let (transport, serverID, category) = try await handshake(&messages, outbound: outbound)
            sender.yield(.cipher(transport.send))
            var session = SendspinSession(
                client: client, identity: identity, sender: sender, generation: generation, serverID: serverID, peer: peer,
                keys: SendspinSession.Keys(category: category, handshakeHash: transport.handshakeHash), leave: leave)
            var receiver = SendspinReceiver(cipher: transport.receive)
            var budget = SendspinMessageBudget()
            do {
                while let message = try await messages.next() {
                    guard case .binary(let buffer) = message else {
                        throw SendspinError(.malformedMessage, "a text message after the handshake")
                    }
                    let received = MonotonicClock.nowNanoseconds()
                    // The global executor is the event loops': a long run of messages gives way.
                    if try budget.take(now: received) { await Task.yield() }
                    guard let whole = try receiver.receive(Array(buffer.readableBytesView)[...]) else { continue }
                    try await session.handle(whole, receivedAt: received)
                    if let rekeyed = session.takeReceiveCipher() { receiver.rekey(rekeyed) }
                    if session.activated { watch.activated.store(true, ordering: .relaxed) }
                }
            } catch let error as SendspinError {
                throw error
            } catch {
                // The socket closed under the reader: a failure off it says why.
                if let failed = watch.failure.withLock({ $0 }) { throw failed }
                throw error
            }
            if let failed = watch.failure.withLock({ $0 }) { throw failed }
        }
    }

    /// The cleartext exchange: `client/init`, `server/init`, Noise message 1, our message 2.
    /// Returns the transport ciphers, the server's identity and the kind of PSK that keyed them.
    private func handshake(
        _ messages: inout WebSocketInboundMessageStream.AsyncIterator, outbound: WebSocketOutboundWriter
    ) async throws -> (NoiseTransport, serverID: String, category: SendspinTrustStore.Category) {
        let suite = client.state.withLock { $0.suite }
        let clientInit = SendspinOutbound.clientInit(clientID: identity.clientID, suite: suite)
        try await outbound.write(.text(clientInit))
        let serverInit = try await nextText(&messages, "server/init")
        let serverID = try Self.parseServerInit(serverInit)
        var noise = try NoiseHandshake(
            suite: suite, role: .responder, staticKey: identity.privateKey, remoteStatic: serverID.key,
            prologue: Array(clientInit.utf8) + Array(serverInit.utf8))
        let message1 = try Self.parseHandshake(try await nextText(&messages, "Noise message 1"))
        let (message2, key) = try Self.answer(message1, with: &noise, trust: identity.trust, serverID: serverID.text) { category in
            // A server that lost or never had what it referenced verifies the Sentinel answer as a
            // lost credential rather than a forgery, and can pair again over this connection.
            client.logger.warning("sendspin server referenced a credential (\(category.prefix(8))) this player does not hold; answering unpaired")
            return SendspinTrustStore.sentinel
        }
        try await outbound.write(.text(message2))
        return (try noise.split(), serverID.text, key.category)
    }

    /// Reads Noise message 1, keys `noise` with the PSK its payload names (or what `missing` gives
    /// for one this player does not hold; without it, that is a handshake error) and returns
    /// message 2 as a `noise/handshake` message.
    static func answer(
        _ message1: [UInt8], with noise: inout NoiseHandshake, trust: SendspinTrustStore, serverID: String,
        missing: ((String) -> SendspinTrustStore.Resolved)? = nil
    ) throws(SendspinError) -> (message2: String, key: SendspinTrustStore.Resolved) {
        let (pskID, category) = try parsePSKReference(try noise.readMessage(message1))
        let key: SendspinTrustStore.Resolved
        if let resolved = try trust.resolve(pskID: pskID, category: category, serverID: serverID) {
            key = resolved
        } else if let missing {
            key = missing(category)
        } else {
            throw SendspinError(.handshake, "Noise message 1 names a PSK (\(category.prefix(8))) this player does not hold")
        }
        try noise.setPSK(key.psk)
        return (SendspinOutbound.handshake(try noise.writeMessage(Array("{}".utf8))), key)
    }

    /// The next text message of the handshake; a binary one, the end, or a wait over
    /// `bringUpTimeout` (the timer task) ends the connection.
    private func nextText(_ messages: inout WebSocketInboundMessageStream.AsyncIterator, _ what: String) async throws -> String {
        switch try await messages.next() {
        case .text(let text)?: return text
        case .binary?: throw SendspinError(.handshake, "a binary message instead of \(what)")
        case nil: throw SendspinError(.refused, "the server closed the connection before \(what)")
        }
    }

    /// The writer: encrypts each message in queue order and sends it.
    static func write(_ queue: AsyncStream<Outgoing>, to outbound: WebSocketOutboundWriter) async throws(SendspinError) {
        var cipher: NoiseCipherState?
        var next: NoiseCipherState?
        for await item in queue {
            let json: String
            switch item {
            case .cipher(let key):
                cipher = key
                continue
            case .json(let text): json = text
            case .rekey(let text, let key):
                json = text
                next = key
            case .time: json = SendspinOutbound.clientTime(Int64(MonotonicClock.nowNanoseconds() / 1000))
            case .close:
                try? await outbound.close(.normalClosure, reason: nil)
                return
            }
            guard var current = cipher else { continue }
            let plaintext = [SendspinReceiver.jsonType] + Array(json.utf8)
            let sealed = try current.encrypt(ad: [], plaintext)
            cipher = next ?? current
            next = nil
            do {
                try await outbound.write(.binary(ByteBuffer(bytes: sealed)))
            } catch {
                return
            }
        }
    }

}

extension SendspinConnection {
    /// The server's identity from `server/init`; `server/error` (or anything else) refuses the connection.
    static func parseServerInit(_ text: String) throws(SendspinError) -> (text: String, key: [UInt8]) {
        struct Message: Decodable {
            struct Payload: Decodable {
                var serverID: String?
                var version: Int?
                var reason: String?
                enum CodingKeys: String, CodingKey {
                    case serverID = "server_id"
                    case version, reason
                }
            }
            var type: String
            var payload: Payload
        }
        guard let message = try? JSONDecoder().decode(Message.self, from: Data(text.utf8)) else {
            throw SendspinError(.handshake, "server/init is not JSON of its shape")
        }
        if message.type == "server/error" {
            if message.payload.reason == "unsupported_suite" {
                throw SendspinError(.unsupportedSuite, "the server does not speak the suite asked for")
            }
            throw SendspinError(.refused, "the server refused client/init: \(message.payload.reason?.prefix(64) ?? "no reason")")
        }
        guard message.type == "server/init", message.payload.version == 1 else {
            throw SendspinError(.handshake, "expected server/init version 1, got \(message.type.prefix(32)) version \(message.payload.version.map(String.init) ?? "none")")
        }
        guard let id = message.payload.serverID, id.count == 43, let key = Base64URL.decode(id), key.count == 32 else {
            throw SendspinError(.handshake, "server/init's server_id is not a base64url X25519 key")
        }
        return (id, key)
    }

    /// The Noise bytes of a `noise/handshake` message.
    static func parseHandshake(_ text: String) throws(SendspinError) -> [UInt8] {
        struct Message: Decodable {
            struct Payload: Decodable { var data: String }
            var type: String
            var payload: Payload
        }
        guard let message = try? JSONDecoder().decode(Message.self, from: Data(text.utf8)), message.type == "noise/handshake",
            let bytes = Base64URL.decode(message.payload.data)
        else { throw SendspinError(.handshake, "expected noise/handshake with base64url data") }
        return bytes
    }

    /// `psk_id` and `psk_category` from Noise message 1's payload.
    static func parsePSKReference(_ payload: [UInt8]) throws(SendspinError) -> (id: String, category: String) {
        struct Reference: Decodable {
            var psk_id: String
            var psk_category: String
        }
        guard let reference = try? JSONDecoder().decode(Reference.self, from: Data(payload)) else {
            throw SendspinError(.handshake, "Noise message 1's payload is not {psk_id, psk_category}")
        }
        return (reference.psk_id, reference.psk_category)
    }
}

/// SHA-256 as bytes.
enum SHA256Bytes {
    static func of(_ text: String) -> [UInt8] { of(Array(text.utf8)) }
    static func of(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }
}
