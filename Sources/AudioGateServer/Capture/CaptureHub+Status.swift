/// One client format in `/v1/status`.
struct CaptureFormatStatus: Encodable, Equatable {
    var rate: Int
    var channels: Int
    var format: String
    var subscribers: Int
}

/// One capture client in `/v1/status`.
struct CaptureClientStatus: Encodable, Equatable {
    var id: Int
    var transport: String
    var rate: Int
    var channels: Int
    var format: String
    var chunkMs: Int
    var encoding: String
    var sentChunks: UInt64
    var queuedMs: Double
    var droppedMs: Double
}

extension CaptureHub {
    /// Subscribers per client format, by rate.
    var formatStatus: [CaptureFormatStatus] {
        let counts = subscribers.reduce(into: [AudioFormatKey: Int]()) { counts, subscriber in
            counts[AudioFormatKey(subscriber.parameters), default: 0] += 1
        }
        return counts.map { key, count in
            CaptureFormatStatus(rate: key.rate, channels: key.channels, format: key.format, subscribers: count)
        }.sorted { ($0.rate, $0.channels, $0.format) < ($1.rate, $1.channels, $1.format) }
    }

    /// Every client with its queue and drops.
    var clientStatus: [CaptureClientStatus] {
        subscribers.map { subscriber in
            let parameters = subscriber.parameters
            return CaptureClientStatus(
                id: subscriber.id, transport: subscriber.transport.rawValue, rate: parameters.format.rate,
                channels: parameters.format.channels, format: parameters.format.sampleFormat.rawValue,
                chunkMs: parameters.chunkMilliseconds,
                encoding: subscriber.transport == .http ? parameters.container.rawValue : parameters.encoding.rawValue,
                sentChunks: subscriber.sentChunks, queuedMs: subscriber.queuedMilliseconds,
                droppedMs: subscriber.droppedMilliseconds)
        }
    }

    /// Read-to-send delay percentiles of every chunk sent so far.
    var sendDelayStatus: LatencyHistogram.Summary { metrics.delays.summary }
}

private struct AudioFormatKey: Hashable {
    var rate: Int
    var channels: Int
    var format: String

    init(_ parameters: CaptureParameters) {
        rate = parameters.format.rate
        channels = parameters.format.channels
        format = parameters.format.sampleFormat.rawValue
    }
}
