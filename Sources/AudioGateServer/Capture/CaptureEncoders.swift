import AudioGateCore
import NIOPosix
import Synchronization

/// The shared encoders of live capture, one per distinct setting.
final class CaptureEncoders: Sendable {
    private let encoders = Mutex<[CaptureEncoder]>([])
    /// Where the encoders' work runs.
    let pool: NIOThreadPool

    init(pool: NIOThreadPool = .singleton) {
        self.pool = pool
    }

    /// Encoders running now (shared ones).
    var count: Int { encoders.withLock { $0.count } }

    /// Clients of all encoders, private ones included (they count against the capture client limit).
    var listenerCount: Int { listeners.load(ordering: .relaxed) }
    private let listeners = Atomic<Int>(0)

    /// The shared encoder of `key`, with `listener` added (built and started if it is the first).
    /// With `limitFrames` the client gets an encoder of its own, which ends its stream properly
    /// after exactly that much audio.
    func join(
        _ key: CaptureEncoder.Key, listener: EncodedListener, limitFrames: Int?, chunkMilliseconds: Int, hub: CaptureHub
    ) throws(CaptureError) -> CaptureEncoder {
        let encoder = try choose(key, listener: listener, limitFrames: limitFrames, chunkMilliseconds: chunkMilliseconds, hub: hub)
        listeners.add(1, ordering: .relaxed)
        return encoder
    }

    private func choose(
        _ key: CaptureEncoder.Key, listener: EncodedListener, limitFrames: Int?, chunkMilliseconds: Int, hub: CaptureHub
    ) throws(CaptureError) -> CaptureEncoder {
        if limitFrames == nil, let existing = encoders.withLock({ list in list.first { $0.key == key && $0.add(listener) } }) {
            return existing
        }
        // Built outside the lock: opening an encoder takes a while.
        let candidate = try CaptureEncoder(key: key, limitFrames: limitFrames, hub: hub, chunkMilliseconds: chunkMilliseconds)
        if limitFrames != nil {
            _ = candidate.add(listener)
            start(candidate, hub: hub)
            return candidate
        }
        let (chosen, isNew) = encoders.withLock { list -> (CaptureEncoder, Bool) in
            if let existing = list.first(where: { $0.key == key && $0.add(listener) }) { return (existing, false) }
            _ = candidate.add(listener)
            list.append(candidate)
            return (candidate, true)
        }
        if isNew {
            start(candidate, hub: hub)
        } else {
            // Another client built one meanwhile: this one never ran.
            hub.unsubscribe(candidate.subscriber)
        }
        return chosen
    }

    /// Removes a client; the last one of a shared encoder stops it.
    func leave(_ encoder: CaptureEncoder, listener: EncodedListener) {
        listener.close()
        listeners.subtract(1, ordering: .relaxed)
        encoders.withLock { list in
            guard encoder.remove(listener) == 0 else { return }
            list.removeAll { $0 === encoder }
            encoder.stop()
        }
    }

    /// The shared encoders running (not the private ones of `seconds` streams), for `/v1/status`.
    var status: [CaptureEncoderStatus] {
        let shared = encoders.withLock { $0 }
        return shared.map { encoder in
            let encoding = encoder.key.encoding
            return CaptureEncoderStatus(
                container: encoding.container == .packets ? "opus" : encoding.container.rawValue, codec: encoding.codec.rawValue,
                rate: encoding.rate, channels: encoding.channels, bitrate: encoding.effectiveBitrate, clients: encoder.listenerCount)
        }
    }

    private func start(_ encoder: CaptureEncoder, hub: CaptureHub) {
        let pool = pool
        // Ends when its subscriber is closed (the last client left, or shutdown) or its limit is reached.
        Task { await encoder.run(hub: hub, pool: pool) }
    }
}

/// One shared encoder in `/v1/status` (`container` `opus`: bare packets of the WebSocket).
struct CaptureEncoderStatus: Encodable, Equatable {
    var container: String
    var codec: String
    var rate: Int
    var channels: Int
    var bitrate: Int?
    var clients: Int
}
