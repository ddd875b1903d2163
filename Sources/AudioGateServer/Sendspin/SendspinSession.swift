import AudioGateCore
import Foundation
import Logging

/// One connection's encrypted conversation in order: `server/hello`, our `client/hello`,
/// `server/activate`, then time answers, stream control, commands and audio chunks. Runs on the
/// connection's reader task, so decoding never holds up a socket.
struct SendspinSession {
    /// Startup lead and steady buffer the player asks for: the server sends no further ahead than
    /// this, and a Python server sharing a loaded machine was seen to fall 250 ms behind.
    static let requiredLeadTimeMilliseconds = 1000
    static let minimumBufferMilliseconds = 1000
    /// Compressed audio the server may send ahead (`buffer_capacity`): seconds of 48 kHz stereo PCM.
    static let bufferCapacityBytes = 2_000_000

    /// What keyed the session: the kind of PSK, and the handshake hash a re-handshake binds to.
    struct Keys: Sendable {
        var category: SendspinTrustStore.Category
        var handshakeHash: [UInt8]
    }

    let client: SendspinClient
    let identity: SendspinIdentity
    let sender: AsyncStream<SendspinConnection.Outgoing>.Continuation
    /// The connection's number, for its claim on the player.
    let generation: UInt64
    /// The server's identity from the handshake.
    let serverID: String
    /// The address of a server that dialed the player.
    let peer: String?
    /// Says goodbye and closes the connection with a reason.
    let leave: @Sendable (SendspinError) -> Void
    /// The connection was turned away or taken over: what else arrives is not played.
    private var left = false
    private(set) var activated = false
    private var hello = false
    private var roles: [String] = []
    private var decoder: SnapcastDecoder?
    private var format: SendspinStreamFormat?
    private var ingest: PlaybackIngest?
    /// Stream starts logged on this connection (one at info level).
    private var startsLogged = 0
    private var keys: Keys
    /// Pairing activations since the last handshake (`pairing_index`).
    private var pairingIndex = 0
    /// The long-term PSK sent in `client/pair-finalize`, kept once the server acknowledges it.
    private var pendingPSK: [UInt8]?
    /// The pairing-code attempt in progress.
    private var codePairing: SendspinCodePairing
    /// The receiving key of a re-handshake, for the connection's receiver.
    private var rekeyed: NoiseCipherState?
    /// The next activation follows a re-handshake: the server gets the player's whole state again.
    private var resynchronize = false

    init(
        client: SendspinClient, identity: SendspinIdentity, sender: AsyncStream<SendspinConnection.Outgoing>.Continuation,
        generation: UInt64, serverID: String, peer: String?, keys: Keys, leave: @escaping @Sendable (SendspinError) -> Void
    ) {
        self.peer = peer
        self.client = client
        self.identity = identity
        self.keys = keys
        self.codePairing = SendspinCodePairing(handshakeHash: keys.handshakeHash)
        self.sender = sender
        self.generation = generation
        self.serverID = serverID
        self.leave = leave
    }

    /// The receiving key a re-handshake just made, once.
    mutating func takeReceiveCipher() -> NoiseCipherState? {
        defer { rekeyed = nil }
        return rekeyed
    }

    private var playerActive: Bool { roles.contains("player@v1") }

    /// Handles one whole message that arrived at `received` (CLOCK_MONOTONIC ns).
    mutating func handle(_ message: SendspinReceiver.Message, receivedAt received: UInt64) async throws {
        guard !left, !hello || client.holds(generation) else {
            // Another server took the player; its goodbye and close are on their way.
            left = true
            return
        }
        switch message.type {
        case SendspinReceiver.jsonType:
            try await handle(try SendspinMessage.decode(message.body), receivedAt: received)
        case SendspinReceiver.audioChunkType:
            try await play(message.body)
        default:
            // Other roles' binaries (artwork, visualizer) are not this player's.
            break
        }
    }

    private mutating func handle(_ message: SendspinMessage, receivedAt received: UInt64) async throws {
        guard hello else {
            guard case .serverHello(let name, let reason) = message else {
                throw SendspinError(.malformedMessage, "the first message is not server/hello")
            }
            // A server that gives no reason dialed to be available, as for discovery.
            let reasonText = reason.map { String($0.prefix(16)) } ?? "discovery"
            let leave = leave
            let evict: @Sendable () -> Void = { leave(SendspinError(.anotherServer, "another server took the player")) }
            guard client.claim(generation: generation, serverName: name, serverID: serverID, reason: reasonText, peer: peer, evict: evict) else {
                left = true
                leave(SendspinError(.anotherServer, "another server holds the player; this one dialed for \(reasonText)"))
                return
            }
            hello = true
            let formats = SendspinFormat.supported(codecs: client.configuration.codecs)
            sender.yield(
                .json(
                    SendspinOutbound.clientHello(
                        name: client.configuration.name, version: AudioGateVersion.current, formats: formats,
                        bufferCapacity: Self.bufferCapacityBytes, staticPairingCode: client.configuration.staticPairingCode != nil)))
            return
        }
        switch message {
        case .serverHello:
            break
        case .serverActivate(let activation):
            try activate(activation)
        case .serverTime(let reply):
            let recorded = try client.clock.record(reply, receivedAt: received)
            if recorded.sendNext { sender.yield(.time) }
            if recorded.resumed {
                // Debug: a connection's end is one line at info, and this is part of the next one starting.
                client.logger.debug("sendspin clock: the server's first answers agree with the last connection's estimate, which carries on")
            }
            if recorded.synchronized && playerActive { sendState() }
            // Chunks arrive seconds ahead and are dated as they arrive: what the filter learns
            // meanwhile (most of it in a connection's first seconds) applies to them too.
            if recorded.moved != 0 { ingest?.stream.retimeTimed(by: recorded.moved) }
        case .streamStart(let player):
            guard let player, playerActive else { return }
            try start(player)
        case .streamClear(let clear):
            if clear?.contains("player") ?? true { ingest?.stream.clear() }
        case .streamEnd(let ended):
            if ended?.contains("player") ?? true { end() }
        case .serverCommand(let command):
            if let command, playerActive { apply(command) }
        case .groupUpdate(let group):
            client.state.withLock { state in
                if let playing = group.playbackState { state.playbackState = String(playing.prefix(32)) }
            }
            if group.playbackState == "playing" { await client.playing(serverID: serverID) }
            client.announceMusic()
        case .serverState(let update):
            let metadata = roles.contains("metadata@v1") ? update.metadata : nil
            let controller = roles.contains("controller@v1") ? update.controller : nil
            client.state.withLock { state in
                if let metadata { state.metadata = metadata }
                if let controller { state.controller = controller }
            }
            if metadata != nil { client.announceMusic() }
        case .rehandshake(let message1):
            try rehandshake(message1)
        case .pairInit(let nonceA):
            try pairRound(nonceA)
        case .pairAuth(let share):
            try pairAuth(share)
        case .pairConfirm(let tag):
            try pairConfirm(tag)
        case .pairFinalized:
            guard let psk = pendingPSK else { return }
            pendingPSK = nil
            client.pairingWindow.finished(generation, paired: true)
            // Kept before the re-handshake that follows is read: it names this PSK.
            try await identity.trust.pair(serverID: serverID, psk: psk)
            client.logger.info("sendspin: paired with server \(client.state.withLock { $0.serverName } ?? serverID)")
        case .pairAborted(let reason):
            pendingPSK = nil
            endCodePairing()
            client.logger.info("sendspin: the server ended the pairing attempt (\(reason ?? "no reason"))")
        case .unpair:
            guard keys.category == .longTerm else { return }
            try await identity.trust.unpair(serverID: serverID)
            left = true
            leave(SendspinError(.refused, "the server unpaired this player"))
        case .ignored:
            break
        }
    }

    /// `server/activate`: playback and pairing are the activities this player takes.
    private mutating func activate(_ activation: SendspinActivation) throws {
        let unknown = activation.activities.filter { $0 != "playback" && $0 != "pairing" }
        guard unknown.isEmpty else {
            sender.yield(.json(SendspinOutbound.goodbye("unauthorized")))
            throw SendspinError(.refused, "the server declared activities \(unknown.prefix(4)) this player does not take")
        }
        if activation.activities.contains("pairing") { pair(activation.pairing) }
        let wasActive = playerActive
        if let activeRoles = activation.activeRoles { roles = activeRoles } else if !activated { roles = [] }
        activated = true
        let (metadata, controller) = (roles.contains("metadata@v1"), roles.contains("controller@v1"))
        client.state.withLock {
            $0.connected = true
            $0.activities = Array(activation.activities.prefix(4))
            $0.roles = Array(roles.prefix(8).map { String($0.prefix(32)) })
            $0.paired = keys.category == .longTerm
            if !metadata { $0.metadata = nil }
            if !controller { $0.controller = nil }
            $0.commands = controller ? sender : nil
        }
        if wasActive && !playerActive { end() }
        if playerActive && (!wasActive || resynchronize) { sendState() }
        resynchronize = false
    }

    /// A pairing activation: the Pairing PSK method on a session keyed by the Pairing PSK sends a
    /// fresh long-term PSK at once; the static pairing code (when the player has one) starts its
    /// CPace exchange once a pairing window is open; the dynamic code commits to a nonce and shows
    /// its digits once the server's arrives; any other is refused and the connection stays as it was.
    private mutating func pair(_ pairing: SendspinActivation.Pairing?) {
        pairingIndex += 1
        pendingPSK = nil
        endCodePairing()
        switch pairing?.method {
        case "pairing_psk" where keys.category == .pairing:
            let psk = SendspinTrustStore.randomKey()
            pendingPSK = psk
            sender.yield(.json(SendspinOutbound.pairInit(pairingIndex: pairingIndex)))
            sender.yield(.json(SendspinOutbound.pairFinalize(longTermPSK: psk)))
        case "static_pairing_code" where client.configuration.staticPairingCode != nil:
            codePairing.beginStatic(pairingIndex: pairingIndex, code: client.configuration.staticPairingCode ?? "")
            startOrWait(SendspinOutbound.pairInit(pairingIndex: pairingIndex), method: "the static code")
        case "dynamic_pairing_code" where pairing?.format == "digits":
            let pairInit = codePairing.beginDynamic(pairingIndex: pairingIndex)
            // Each round is a guess at six digits: past the limit only the operator's window lets more run.
            if client.pairingWindow.roundLimitReached {
                startOrWait(pairInit, method: "a dynamic code after \(SendspinPairingWindow.roundLimit) rounds")
            } else {
                sender.yield(.json(pairInit))
            }
        default:
            sender.yield(.json(SendspinOutbound.pairAbort("method_not_supported")))
        }
    }

    /// Sends `pairInit` when the pairing window admits this connection, or says `client/pair-pending`
    /// and leaves it to the window to send when it opens.
    private func startOrWait(_ pairInit: String, method: String) {
        let waiter = SendspinPairingWindow.Waiter(generation: generation, pairInit: pairInit, sender: sender)
        if client.pairingWindow.claim(waiter) {
            sender.yield(.json(pairInit))
            return
        }
        sender.yield(.json(SendspinOutbound.pairPending(pairingIndex: pairingIndex, message: Self.pairPendingMessage)))
        client.logger.info(
            "sendspin: \(client.state.withLock { $0.serverName } ?? serverID) asks to pair by \(method): waiting for a pairing window (POST /v1/sendspin/pairing)")
    }

    /// What the server shows its operator while an attempt waits for the pairing window.
    static let pairPendingMessage = "Open a pairing window on the player: POST /v1/sendspin/pairing"

    /// `server/pair-init` of the dynamic code: a round starts, and the player shows its digits.
    private mutating func pairRound(_ nonceA: [UInt8]?) throws(SendspinError) {
        let round = try codePairing.serverInit(nonceA: nonceA)
        client.pairingWindow.countRound()
        let shown = String(round.code.prefix(3)) + "-" + String(round.code.suffix(3))
        client.state.withLock { $0.pairingCode = SendspinClient.ShownCode(generation: generation, code: shown) }
        client.logger.notice(
            "sendspin: pairing code \(shown) for \(client.state.withLock { $0.serverName } ?? serverID): type it into the server (round \(round.round))")
        // Said digit by digit, on a task of its own: synthesis takes longer than a message may wait.
        let spoken = "Pairing code: " + round.code.map(String.init).joined(separator: " ")
        let client = client
        Task {
            do {
                try await client.speak(spoken)
            } catch {
                client.logger.warning("sendspin: the pairing code could not be said on the loudspeaker: \(error)")
            }
        }
    }

    /// `server/pair-auth`: answers with this player's CPace share; the static code only while this
    /// connection holds the pairing window.
    private mutating func pairAuth(_ share: [UInt8]) throws(SendspinError) {
        if codePairing.isStatic, !client.pairingWindow.holds(generation) {
            throw SendspinError(.pairing, "server/pair-auth for the static code without the pairing window")
        }
        sender.yield(.json(try codePairing.serverShare(share)))
    }

    /// `server/pair-confirm`: a server that proves the code gets this player's tag and a long-term
    /// PSK wrapped under the code's key; a wrong dynamic code gets another round while rounds are
    /// left; otherwise `pairing_code_mismatch` (a wrong static code counts against the window).
    private mutating func pairConfirm(_ tag: [UInt8]) throws(SendspinError) {
        let wasStatic = codePairing.isStatic
        let suite = client.state.withLock { $0.suite }
        switch try codePairing.serverConfirm(tag, suite: suite, mayRetry: !client.pairingWindow.roundLimitReached) {
        case .paired(let messages, let psk):
            pendingPSK = psk
            for message in messages { sender.yield(.json(message)) }
            if !wasStatic { client.pairingWindow.resetRounds() }
            clearShownCode()
        case .retry(let message):
            sender.yield(.json(message))
            client.logger.warning("sendspin: the server's operator typed a pairing code that does not match; the server may try again")
        case .mismatch(let message):
            sender.yield(.json(message))
            if wasStatic { client.pairingWindow.finished(generation, paired: false) }
            clearShownCode()
            client.logger.warning("sendspin: a server tried to pair with a pairing code that does not match this player's")
        }
    }

    /// Ends this connection's pairing-code attempt: it neither waits for nor holds the window, and
    /// its code is no longer shown.
    private mutating func endCodePairing() {
        codePairing.reset()
        client.pairingWindow.forget(generation)
        clearShownCode()
    }

    private func clearShownCode() {
        client.state.withLock { state in
            if state.pairingCode?.generation == generation { state.pairingCode = nil }
        }
    }

    /// A re-handshake as the responder, bound to the last handshake's hash: message 2 leaves under
    /// the old key, everything after it under the new one.
    private mutating func rehandshake(_ message1: [UInt8]) throws(SendspinError) {
        guard let serverKey = Base64URL.decode(serverID) else { throw SendspinError(.handshake, "the server's identity is not base64url") }
        let suite = client.state.withLock { $0.suite }
        var noise = try NoiseHandshake(
            suite: suite, role: .responder, staticKey: identity.privateKey, remoteStatic: serverKey, prologue: keys.handshakeHash)
        let (message2, key): (String, SendspinTrustStore.Resolved)
        do throws(SendspinError) {
            (message2, key) = try SendspinConnection.answer(message1, with: &noise, trust: identity.trust, serverID: serverID)
        } catch {
            // A message 1 that does not authenticate is a failed handshake, not a failed transport.
            throw SendspinError(.handshake, "re-handshake: \(error.message)")
        }
        let transport = try noise.split()
        sender.yield(.rekey(message2, transport.send))
        rekeyed = transport.receive
        keys = Keys(category: key.category, handshakeHash: transport.handshakeHash)
        codePairing = SendspinCodePairing(handshakeHash: transport.handshakeHash)
        pairingIndex = 0
        resynchronize = true
        client.state.withLock { $0.paired = key.category == .longTerm }
    }

    /// `client/state`: available once the clock is synchronized, with the player's settings.
    private func sendState() {
        let player = client.state.withLock { state in
            SendspinPlayerState(
                volume: state.volume, muted: state.muted, outputDelayMs: state.outputDelayMilliseconds,
                requiredLeadTimeMs: Self.requiredLeadTimeMilliseconds, minBufferMs: Self.minimumBufferMilliseconds)
        }
        sender.yield(.json(SendspinOutbound.clientState(available: client.clock.isSynchronized, player: player)))
    }

    /// `server/command`: volume and mute on the stream's gain, the output delay on the chunk times.
    private func apply(_ command: SendspinPlayerCommand) {
        switch command.command {
        case "volume":
            guard let volume = command.volume else { return }
            client.state.withLock { $0.volume = min(max(volume, 0), 100) }
        case "mute":
            guard let mute = command.mute else { return }
            client.state.withLock { $0.muted = mute }
        case "set_output_delay":
            guard let delay = command.outputDelayMs else { return }
            client.state.withLock {
                $0.outputDelayMilliseconds = min(max(delay, 0), SendspinConfiguration.maximumOutputDelayMilliseconds)
            }
        default:
            // Commands not offered in supported_commands are ignored, as the specification asks.
            return
        }
        applyVolume()
        sendState()
    }

    private func applyVolume() {
        let (volume, muted) = client.state.withLock { ($0.volume, $0.muted) }
        ingest?.stream.setVolume(SendspinVolume.gain(volume: volume), muted: muted)
    }

    /// `stream/start`: a decoder for the format; the timed stream, taken on the first start.
    private mutating func start(_ player: SendspinStreamFormat) throws {
        if player == format, decoder != nil { return }
        let decoder = try Self.decoder(for: player, codecs: client.configuration.codecs)
        let ingest: PlaybackIngest
        if let current = self.ingest {
            // Another format on the same timeline: queued audio stays unless the rate or the
            // channels change, which this ingest cannot carry over.
            if current.format.rate != decoder.format.rate || current.format.channels != decoder.format.channels {
                current.stream.clear(measured: false)
                ingest = try PlaybackIngest.timed(stream: current.stream, format: decoder.format, mixFormat: client.mixer.mixFormatProvider)
            } else {
                ingest = current
            }
        } else {
            ingest = try client.mixer.acquireTimed(client.configuration.stream, role: .music, format: decoder.format)
        }
        self.decoder = decoder
        self.format = player
        self.ingest = ingest
        applyVolume()
        client.state.withLock {
            $0.codec = player.codec
            $0.format = player
            $0.stream = ingest.stream
        }
        let level: Logger.Level = startsLogged == 0 ? .info : .debug
        startsLogged += 1
        client.logger.log(
            level: level, "sendspin stream: \(player.codec), \(player.sampleRate) Hz, \(player.channels) channels, \(player.bitDepth) bits")
    }

    /// `stream/end`: the stream is given back until the next start.
    private mutating func end() {
        decoder = nil
        format = nil
        ingest = nil
        client.releaseStream()
    }

    /// One audio chunk: its 12 header bytes after the type (timestamp, send-ahead), then whole codec units.
    private mutating func play(_ body: ArraySlice<UInt8>) async throws {
        guard let decoder, let ingest else { return }
        guard body.count >= 12 else {
            throw SendspinError(.malformedMessage, "an audio chunk of \(body.count + 1) bytes is shorter than its 13-byte header")
        }
        let timestamp = body.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let delay = Int64(client.state.withLock { $0.outputDelayMilliseconds }) * 1000
        guard let local = try client.clock.localNanoseconds(forServer: Int64(bitPattern: timestamp), minus: delay) else { return }
        let payload = body.dropFirst(12)
        let waiting: [Int16]?
        do {
            // Offered from the decoder's buffer; copied only when the stream is full and the chunk
            // has to wait for room.
            waiting = try payload.withUnsafeBytes { raw in
                try decoder.decode(bytes: raw) { samples -> [Int16]? in
                    guard !samples.isEmpty else { return nil }
                    return ingest.offer(UnsafeRawBufferPointer(samples), presentedAt: local) == .consumed(0) ? Array(samples) : nil
                }
            }
        } catch let error as SnapcastError {
            throw SendspinError(.badChunk, error.message)
        }
        if let waiting { try await ingest.write(waiting, presentedAt: local) }
        client.state.withLock { $0.played = true }
    }

    /// A decoder for a `stream/start` format: a codec this player offered, PCM of 16 or 24 bits,
    /// FLAC with its STREAMINFO header, Opus.
    static func decoder(for player: SendspinStreamFormat, codecs: [SendspinCodec]) throws(SendspinError) -> SnapcastDecoder {
        guard let codec = SendspinCodec(rawValue: player.codec), codecs.contains(codec) else {
            throw SendspinError(.badFormat, "stream/start names codec '\(player.codec.prefix(32))', which this player did not offer")
        }
        var sampleFormat = SampleFormat.s16le
        var extradata: [UInt8] = []
        switch codec {
        case .pcm:
            switch player.bitDepth {
            case 16: sampleFormat = .s16le
            case 24: sampleFormat = .s24le3
            default: throw SendspinError(.badFormat, "pcm of \(player.bitDepth) bits: 16 and 24 are played")
            }
        case .flac:
            guard let header = player.codecHeader, let bytes = Data(base64Encoded: header) else {
                throw SendspinError(.badFormat, "flac without a base64 codec_header")
            }
            extradata = Array(bytes)
        case .opus:
            break
        }
        do throws(SnapcastError) {
            return try SnapcastDecoder(
                codec: codec.rawValue, rate: player.sampleRate, channels: player.channels, pcm: sampleFormat, extradata: extradata)
        } catch {
            throw SendspinError(.badFormat, error.message)
        }
    }
}
