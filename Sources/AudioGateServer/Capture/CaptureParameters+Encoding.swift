import AudioGateCore

extension CaptureParameters {
    /// The encoding `codec`, `bitrate`, `container` or `format=opus` ask for, checked together;
    /// the rate becomes the nearest one the codec takes at or above the one asked for (the capture
    /// side converts to it). Throws a 400 naming the parameter.
    static func compressed(
        query: [String: String], opus: Bool, container: Container, format: AudioFormat, chunk: Int
    ) throws(CaptureError) -> AudioEncoding? {
        let codec = try query["codec"].map { text throws(CaptureError) -> AudioEncoding.Codec in
            guard let codec = AudioEncoding.Codec(rawValue: text) else {
                throw .parameter("codec", "one of \(AudioEncoding.Codec.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return codec
        }
        let bitrate = try query["bitrate"].map { text throws(CaptureError) -> Int in
            guard let value = parseBitrate(text) else {
                throw .parameter("bitrate", "bits per second, e.g. 24000 or 24k")
            }
            return value
        }
        let target: AudioEncoding.Container
        if opus {
            guard container == .raw || container == .wav, query["container"] == nil else {
                throw .parameter("format", "opus is for the WebSocket; over HTTP use container=ogg or container=webm")
            }
            if let codec, codec != .opus { throw .parameter("codec", "format=opus encodes Opus") }
            target = .packets
        } else if let encoded = container.encoded {
            target = encoded
        } else {
            if codec != nil { throw .parameter("codec", "only with container=ogg, webm, flac or mp3, or format=opus") }
            if bitrate != nil { throw .parameter("bitrate", "only with a compressed container or format=opus") }
            return nil
        }
        let chosen = codec ?? target.defaultCodec
        guard target.codecs.contains(chosen) else {
            throw .parameter(
                "codec", "\(target.rawValue) carries \(target.codecs.map(\.rawValue).joined(separator: " or ")), not \(chosen.rawValue)")
        }
        let encoding = AudioEncoding(
            container: target, codec: chosen, rate: chosen.nearestRate(to: format.rate), channels: format.channels,
            bitrate: bitrate, packetMilliseconds: target == .packets ? chunk : 20)
        if target == .packets, !AudioEncoding.opusPacketMilliseconds.contains(chunk) {
            throw .parameter("chunk_ms", "an Opus packet lasts 10, 20, 40 or 60 ms")
        }
        do {
            try encoding.validate()
        } catch {
            throw .parameter(error.parameter, error.message)
        }
        return encoding
    }

    /// `24000`, `24k` or `24kbps` as bits per second.
    static func parseBitrate(_ text: String) -> Int? {
        var digits = Substring(text.lowercased())
        var scale = 1
        if digits.hasSuffix("kbps") { digits = digits.dropLast(4); scale = 1000 }
        else if digits.hasSuffix("k") { digits = digits.dropLast(); scale = 1000 }
        guard let value = Int(digits), value > 0, value <= 10_000_000 / scale else { return nil }
        return value * scale
    }
}
