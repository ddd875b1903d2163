import AudioGateCore

extension RecordingInfo {
    /// Most frames a recording may count: over a year at 384 kHz, and far from overflowing any
    /// byte count made from it.
    static let maximumFrames = 1 << 44

    /// What makes metadata read from disk unfit to use (nil when it is fit): a segment not named
    /// exactly as the server names it (so no name from the file ever becomes a path), a URL that is
    /// not the segment's, a format the server does not record in, or a count out of range.
    var damage: String? {
        guard RecordingID.isValid(id) else { return "the id is not one the server makes" }
        guard ClientFormats.captureRates.contains(rate), ClientFormats.channels.contains(channels),
            let sampleFormat = SampleFormat(rawValue: format), RecordingRequest.formats.contains(sampleFormat),
            RecordingRequest.segmentSeconds.contains(segmentSeconds)
        else { return "rate, channels, format or segment_seconds is not one the server records in" }
        let counts = 0...Self.maximumFrames
        guard counts.contains(frames), counts.contains(bytes) else { return "frames or bytes is out of range" }
        var total = 0
        for (position, segment) in segments.enumerated() {
            guard segment.index == position else { return "segment \(position) says it is segment \(segment.index)" }
            let name = RecordingStore.segmentFile(position, codec: segmentCodec)
            guard segment.file == name else { return "segment \(position) is named \(segment.file.debugDescription), not \(name)" }
            guard segment.url == RecordingStore.segmentURL(id: id, index: position, codec: segmentCodec) else {
                return "segment \(position) has a URL that is not its own"
            }
            guard counts.contains(segment.startFrame), counts.contains(segment.frames), counts.contains(segment.bytes ?? 0) else {
                return "segment \(position) has a count out of range"
            }
            total += segment.frames
            guard total <= Self.maximumFrames else { return "the segments hold more frames than a recording can" }
        }
        for gap in gaps where !counts.contains(gap.startFrame) || !counts.contains(gap.frames) {
            return "a gap at frame \(gap.startFrame) has a count out of range"
        }
        return nil
    }
}
