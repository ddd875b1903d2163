import AudioGateCore

/// A recording as the API shows it: `GET /v1/recordings` lists it without `segments` and `gaps`,
/// `GET /v1/recordings/{id}` with them.
struct RecordingResource: Encodable, Sendable {
    var id: String
    var name: String?
    var state: RecordingInfo.State
    var rate: Int
    var channels: Int
    var format: String
    var segmentSeconds: Int
    var maxSeconds: Double?
    var startedAt: String
    var endedAt: String?
    var frames: Int
    var durationSeconds: Double
    var bytes: Int
    var segmentCount: Int
    var gapCount: Int
    var failure: RecordingInfo.Failure?
    var stopReason: String?
    var processing: VoiceProcessing?
    var codec: RecordingCodec
    var bitrate: Int?
    var url: String
    var segments: [RecordingInfo.Segment]?
    var gaps: [RecordingInfo.Gap]?

    init(_ info: RecordingInfo, detailed: Bool) {
        id = info.id
        name = info.name
        state = info.state
        rate = info.rate
        channels = info.channels
        format = info.format
        segmentSeconds = info.segmentSeconds
        maxSeconds = info.maxSeconds
        startedAt = info.startedAt
        endedAt = info.endedAt
        frames = info.frames
        durationSeconds = info.durationSeconds
        bytes = info.bytes
        segmentCount = info.segments.count
        gapCount = info.gaps.count
        failure = info.failure
        stopReason = info.stopReason
        processing = info.processing
        codec = info.segmentCodec
        bitrate = info.bitrate
        url = "/v1/recordings/\(info.id)"
        if detailed {
            segments = info.segments
            gaps = info.gaps
        }
    }
}
