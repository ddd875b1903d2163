import AudioGateCore
import AudioGateDevices

/// `GET /v1/info`.
struct InfoResponse: Encodable {
    struct Device: Encodable {
        var name: String
        var state: String
        var rate: Int?
        var channels: Int?
        var sampleFormat: String?
        var periodFrames: Int?
        var bufferFrames: Int?

        init(_ status: DeviceStatus) {
            name = status.name
            state = status.state.rawValue
            rate = status.negotiated?.format.rate
            channels = status.negotiated?.format.channels
            sampleFormat = status.negotiated?.format.sampleFormat.rawValue
            periodFrames = status.negotiated?.periodFrames
            bufferFrames = status.negotiated?.bufferFrames
        }
    }

    struct Client: Encodable {
        var rates: [Int]
        var formats: [String]
        var channels: [Int]
        var chunkMs: ClosedRangeModel
        var resampler: String
    }

    struct ClosedRangeModel: Encodable {
        var min: Int
        var max: Int
    }

    var version: String
    var capture: Device
    var playback: Device
    var client: Client
    var limits: ServerConfiguration.Limits
    var wyoming: WyomingStatus
    /// `--duck-db`: how far music is lowered under a voice.
    var duckDb: Double
    /// Present when `--snapcast-server` is set.
    var snapcast: SnapcastInfo?
    /// Present when `--sendspin-server` is set.
    var sendspin: SendspinInfo?
}

/// `GET /v1/status`.
struct StatusResponse: Encodable {
    struct Capture: Encodable {
        var state: String
        var device: String
        var xruns: Int
        var reopens: Int
        var subscribers: Int
        var frames: UInt64
        var lastError: String?
        /// Capture lost to xruns and device outages, in milliseconds.
        var lostMs: Double
        var formats: [CaptureFormatStatus]
        var clients: [CaptureClientStatus]
        var sendDelay: LatencyHistogram.Summary
        /// The shared encoders of compressed capture streams.
        var encoders: [CaptureEncoderStatus] = []
        /// Clients of compressed capture streams (shared and `seconds` encoders); with `subscribers`
        /// they count against `max_capture_clients`.
        var encodedClients = 0
    }

    struct Playback: Encodable {
        var state: String
        var device: String
        var streams: Int
        var queuedMs: Double
        var playedFrames: UInt64
        var underruns: Int
        var xruns: Int
        /// Times the card's buffer was found played out (or within a frame), reported as an underrun or not.
        var ranEmpty: Int
        var reopens: Int
        var lastError: String?
        var volume: VolumeSettings
        /// First byte of a POST to its first sample leaving the card, since start.
        var latency: LatencyHistogram.Summary
        /// Clear/DELETE to the card going silent, since start.
        var clearToSilence: LatencyHistogram.Summary
        /// Each stream's name, role and queue.
        var streamList: [PlaybackStreamStatus]
        var ducking: DuckingStatus
    }

    struct Level: Encodable {
        var rmsDbfs: Double
        var peakDbfs: Double
    }

    var capture: Capture
    var playback: Playback
    var level: Level
    var wyoming: WyomingStatus
    /// Present when `--snapcast-server` is set.
    var snapcast: PlayerStatus<SnapcastStatus>?
    /// Present when `--sendspin-server` is set.
    var sendspin: PlayerStatus<SendspinStatus>?
}

/// `GET /v1/devices`.
struct DevicesResponse: Encodable {
    var devices: [DeviceInfo]
}
