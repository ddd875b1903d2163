import AudioGateCore
import Logging

/// One connection's messages in order: settings, codec header, chunks. Runs on the connection's
/// task (not an event loop), so decoding never holds up a socket.
struct SnapcastSession {
    let client: SnapcastClient
    private var decoder: SnapcastDecoder?
    private var stream: TimedPlaybackStream?
    private var settings: SnapcastServerSettings?
    /// The first chunk has been handed to the stream.
    private(set) var played = false

    init(client: SnapcastClient) {
        self.client = client
    }

    mutating func handle(_ message: SnapcastMessage) throws {
        switch message {
        case .serverSettings(let settings):
            self.settings = settings
            stream?.setVolume(SnapcastVolume.gain(volume: settings.volume), muted: settings.muted)
            client.state.withLock {
                $0.settings = settings
                $0.connected = true
            }
        case .codecHeader(let header):
            let decoder = try SnapcastDecoder(header: header)
            self.decoder = decoder
            if let stream {
                // A new header (the server switched streams) may bring another rate or channel count.
                if stream.format.rate != decoder.format.rate || stream.format.channels != decoder.format.channels {
                    try stream.reformat(decoder.format)
                } else {
                    stream.reset()
                }
            } else {
                let stream = try client.mixer.acquireTimed(client.configuration.stream, role: .music, format: decoder.format)
                if let settings { stream.setVolume(SnapcastVolume.gain(volume: settings.volume), muted: settings.muted) }
                self.stream = stream
            }
            let stream = stream
            client.state.withLock {
                $0.codec = decoder.codec
                $0.format = decoder.format
                $0.stream = stream
            }
            client.logger.info(
                "snapcast stream: \(decoder.codec), \(decoder.format.rate) Hz, \(decoder.format.channels) channels")
        case .wireChunk(let timestamp, let payload):
            guard let decoder, let stream, let settings, client.clock.count > 0 else { return }
            // snapclient: a chunk stamped t (server clock) leaves the loudspeaker at
            // t + bufferMs - latency - own latency, on the server's clock.
            let buffer = Int64(max(0, settings.bufferMs - settings.latency - client.configuration.latencyMilliseconds))
            let local = (timestamp.totalMicroseconds - client.clock.diffMicroseconds + buffer * 1000) * 1000
            guard local > 0 else { return }
            try decoder.decode(payload) { samples in
                guard !samples.isEmpty else { return }
                _ = stream.enqueue(samples, presentationNanoseconds: UInt64(local))
            }
            played = true
        case .time, .ignored:
            break
        }
    }
}
