import AudioGateCore
import Logging

/// One connection's messages in order: settings, codec header, chunks. Runs on the connection's
/// task (not an event loop), so decoding never holds up a socket.
struct SnapcastSession {
    let client: SnapcastClient
    private var decoder: SnapcastDecoder?
    /// The timed stream's ingest, for the current codec header's format.
    private var ingest: PlaybackIngest?
    private var settings: SnapcastServerSettings?
    /// The first chunk has been handed to the stream.
    private(set) var played = false
    /// Codec headers of this connection logged so far.
    private var headersLogged = 0

    init(client: SnapcastClient) {
        self.client = client
    }

    /// Handles one message; a chunk arriving while the stream is at its high watermark waits for
    /// room (the connection stops reading meanwhile).
    mutating func handle(_ message: SnapcastMessage) async throws {
        switch message {
        case .serverSettings(let settings):
            self.settings = settings
            ingest?.stream.setVolume(SnapcastVolume.gain(volume: settings.volume), muted: settings.muted)
            client.state.withLock {
                $0.settings = settings
                $0.connected = true
            }
        case .codecHeader(let header):
            let decoder = try SnapcastDecoder(header: header)
            self.decoder = decoder
            let ingest: PlaybackIngest
            if let current = self.ingest {
                // A new header (the server switched streams) drops what is queued, and may bring
                // another rate or channel count: the producer's format is its ingest's.
                current.stream.clear(measured: false)
                if current.format.rate != decoder.format.rate || current.format.channels != decoder.format.channels {
                    ingest = try PlaybackIngest.timed(
                        stream: current.stream, format: decoder.format, mixFormat: client.mixer.mixFormatProvider)
                } else {
                    ingest = current
                }
            } else {
                ingest = try client.mixer.acquireTimed(client.configuration.stream, role: .music, format: decoder.format)
                if let settings { ingest.stream.setVolume(SnapcastVolume.gain(volume: settings.volume), muted: settings.muted) }
            }
            self.ingest = ingest
            client.state.withLock {
                $0.codec = decoder.codec
                $0.format = decoder.format
                $0.stream = ingest.stream
            }
            // One line per connection: a server may send codec headers without end.
            let level: Logger.Level = headersLogged == 0 ? .info : .debug
            headersLogged += 1
            client.logger.log(
                level: level, "snapcast stream: \(decoder.codec), \(decoder.format.rate) Hz, \(decoder.format.channels) channels")
        case .wireChunk(let timestamp, let payload):
            guard let decoder, let ingest, let settings, client.clock.count > 0 else { return }
            guard
                let local = try Self.presentationNanoseconds(
                    of: timestamp, diffMicroseconds: client.clock.diffMicroseconds, settings: settings,
                    latencyMilliseconds: client.configuration.latencyMilliseconds)
            else { return }
            // Offered from the decoder's buffer; copied only when the stream is full and the
            // chunk has to wait for room.
            let waiting = try decoder.decode(payload) { samples -> [Int16]? in
                guard !samples.isEmpty else { return nil }
                return ingest.offer(UnsafeRawBufferPointer(samples), presentedAt: local) == .consumed(0) ? Array(samples) : nil
            }
            if let waiting { try await ingest.write(waiting, presentedAt: local) }
            played = true
        case .time, .ignored:
            break
        }
    }
}

extension SnapcastSession {
    /// Our CLOCK_MONOTONIC nanoseconds at which a chunk stamped `timestamp` (server clock) leaves
    /// the loudspeaker, as snapclient plays it: t + bufferMs - latency - own latency, moved to our
    /// clock by the measured offset. Nil when that is before our clock's start (the chunk is
    /// dropped); throws `.outOfRange` when it does not fit 64 bits, which bounded settings and
    /// 32-bit wire stamps never reach: checked all the same, so no peer number can trap.
    static func presentationNanoseconds(
        of timestamp: SnapcastTimestamp, diffMicroseconds: Int64, settings: SnapcastServerSettings, latencyMilliseconds: Int
    ) throws(SnapcastError) -> UInt64? {
        let buffer = max(0, settings.bufferMs.clampedSubtract(settings.latency).clampedSubtract(latencyMilliseconds))
        let (shifted, o1) = timestamp.totalMicroseconds.subtractingReportingOverflow(diffMicroseconds)
        let (bufferMicroseconds, o2) = Int64(buffer).multipliedReportingOverflow(by: 1000)
        let (microseconds, o3) = shifted.addingReportingOverflow(bufferMicroseconds)
        let (nanoseconds, o4) = microseconds.multipliedReportingOverflow(by: 1000)
        guard !(o1 || o2 || o3 || o4) else {
            throw SnapcastError(
                .outOfRange,
                "a chunk stamped \(timestamp.seconds) s \(timestamp.microseconds) µs with a clock offset of \(diffMicroseconds) µs is out of range")
        }
        return nanoseconds > 0 ? UInt64(nanoseconds) : nil
    }
}

extension Int {
    /// `self - other`, held at the type's bounds instead of trapping.
    fileprivate func clampedSubtract(_ other: Int) -> Int {
        let (result, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return result }
        return other > 0 ? .min : .max
    }
}
