import AudioGateCore
import NIOCore
import NIOPosix
import Synchronization

/// One encoder for one setting of live capture, shared by every client that asks for that
/// setting: it takes its group's audio as one capture subscriber (32-bit float), encodes each
/// chunk on the NIO thread pool (never on an event loop), and offers every piece to each client's
/// queue by reference. A hundred clients of one Opus setting cost one encoder plus the sends.
///
/// A client joining late gets the stream headers first, then pieces from the next one on (each
/// piece starts at a page, frame or cluster boundary).
final class CaptureEncoder: Sendable {
    /// What makes two clients share an encoder.
    struct Key: Hashable, Sendable {
        var encoding: AudioEncoding
        var processing: VoiceProcessing
    }

    struct State {
        var listeners: [EncodedListener] = []
        /// No client may join any more (the last one left, or the stream ended).
        var ended = false
    }

    let key: Key
    /// Frames after which the stream ends with the container's trailer (`seconds`); nil: endless.
    let limitFrames: Int?
    /// The encoder's stream headers, sent to every client first.
    let header: ByteBuffer
    /// Opus pre-skip at 48 kHz (0 for other codecs).
    let preSkip: Int
    let subscriber: CaptureSubscriber
    private let encoder: EncoderBox
    private let state = Mutex(State())

    /// Builds the encoder and subscribes it to the hub; the pump starts with `run`.
    init(key: Key, limitFrames: Int?, hub: CaptureHub, chunkMilliseconds: Int) throws(CaptureError) {
        self.key = key
        self.limitFrames = limitFrames
        let streaming: StreamingEncoder
        do {
            streaming = try StreamingEncoder(key.encoding)
        } catch {
            throw CaptureError(.encoderFailed, "the \(key.encoding.codec.rawValue) encoder could not be opened: \(error.message)")
        }
        header = streaming.header
        preSkip = streaming.preSkip
        encoder = EncoderBox(streaming)
        var parameters = CaptureParameters()
        parameters.format = AudioFormat(rate: key.encoding.rate, channels: key.encoding.channels, sampleFormat: .f32le)
        parameters.chunkMilliseconds = chunkMilliseconds
        parameters.processing = key.processing
        subscriber = try hub.subscribe(parameters, transport: .encoder)
    }

    /// Adds a client, its queue starting with the headers; false when the encoder has ended.
    func add(_ listener: EncodedListener) -> Bool {
        state.withLock { state in
            guard !state.ended else { return false }
            if header.readableBytes > 0 { listener.offer(header, frames: 0) }
            state.listeners.append(listener)
            return true
        }
    }

    /// Removes a client; returns how many are left.
    func remove(_ listener: EncodedListener) -> Int {
        state.withLock { state in
            state.listeners.removeAll { $0 === listener }
            return state.listeners.count
        }
    }

    /// Lets no client join any more and ends the pump.
    func stop() {
        state.withLock { $0.ended = true }
        subscriber.close()
    }

    /// Clients served now.
    var listenerCount: Int { state.withLock { $0.listeners.count } }

    /// Encodes until the subscriber is closed or `limitFrames` are encoded, then ends every client's
    /// stream (with the container's trailer when the limit was reached) and leaves the hub.
    func run(hub: CaptureHub, pool: NIOThreadPool) async {
        let channels = key.encoding.channels
        var remaining = limitFrames ?? Int.max
        var chunk: [UInt8] = []
        let encoder = encoder
        do {
            while remaining > 0, let event = await subscriber.next(into: &chunk) {
                guard case .chunk = event else { continue }
                let frames = min(remaining, chunk.count / (4 * channels))
                remaining -= frames
                var samples = [Float](repeating: 0, count: frames * channels)
                samples.withUnsafeMutableBytes { target in
                    chunk.withUnsafeBytes { target.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<target.count])) }
                }
                let last = remaining == 0
                let input = samples
                let pieces = try await pool.runIfActive { () throws -> [EncodedPiece] in
                    try encoder.encode(input, finishing: last)
                }
                broadcast(pieces)
            }
        } catch {
            hub.logger.warning("capture encoder stopped", metadata: ["encoding": "\(key.encoding)", "error": "\(error)"])
        }
        let listeners = state.withLock { state in
            state.ended = true
            return state.listeners
        }
        for listener in listeners { listener.finish() }
        await hub.leave(subscriber)
    }

    private func broadcast(_ pieces: [EncodedPiece]) {
        guard !pieces.isEmpty else { return }
        let listeners = state.withLock { $0.listeners }
        for piece in pieces {
            for listener in listeners { listener.offer(piece.bytes, frames: piece.frames) }
        }
    }
}

/// The `StreamingEncoder` of a `CaptureEncoder`.
///
/// Unchecked Sendable: only the encoder's pump uses it, one call at a time (each call is awaited
/// before the next chunk is taken), so the thread-pool thread running a call is its only user.
private final class EncoderBox: @unchecked Sendable {
    private let encoder: StreamingEncoder

    init(_ encoder: StreamingEncoder) {
        self.encoder = encoder
    }

    func encode(_ samples: [Float], finishing: Bool) throws(CodecError) -> [EncodedPiece] {
        var pieces: [EncodedPiece] = []
        try samples.withUnsafeBufferPointer { buffer throws(CodecError) in try encoder.encode(buffer, into: &pieces) }
        if finishing { try encoder.finish(into: &pieces) }
        return pieces
    }
}
