import AudioGateCore
import Foundation

/// Everything known about one recording: what `GET /v1/recordings/{id}` answers and what
/// `recording.json` beside its segments holds.
public struct RecordingInfo: Codable, Sendable, Equatable {
    /// Where a recording is in its life.
    public enum State: String, Codable, Sendable {
        /// Capturing now.
        case recording
        /// Ended by `POST .../stop` or a server shutdown (see `stopReason`).
        case stopped
        /// Reached `max_seconds`.
        case completed
        /// Ended by an error (see `failure`).
        case failed
        /// The server died while it was recording; its last segment was repaired at the next start.
        case interrupted

        /// Whether the recording will never change again.
        public var isFinished: Bool { self != .recording }
    }

    /// One file of the recording.
    public struct Segment: Codable, Sendable, Equatable {
        /// 0-based position in the recording.
        public var index: Int
        /// File name inside the recording's directory.
        public var file: String
        /// Where to download it.
        public var url: String
        /// Recording frame of the segment's first frame.
        public var startFrame: Int
        /// Frames in the segment.
        public var frames: Int
        /// Wall-clock time of the first frame (ISO 8601, UTC).
        public var startTime: String
        /// Whether the file is final (a segment still being written is not).
        public var complete: Bool
        /// Whether the file was made valid again after the server died while writing it.
        public var repaired: Bool
        /// FLAC and Opus: bytes of whole frames or pages a download gets (absent for WAV, whose header
        /// is made for `frames`).
        public var bytes: Int?
    }

    /// A stretch of the timeline with no captured audio, recorded as silence.
    public struct Gap: Codable, Sendable, Equatable {
        /// Recording frame where the silence starts.
        public var startFrame: Int
        /// Frames of silence.
        public var frames: Int
        /// Wall-clock time of the gap's start (ISO 8601, UTC).
        public var startTime: String
        /// `device_lost`, `xrun` or `overrun` (the writer fell behind).
        public var reason: String
    }

    /// Why a recording failed.
    public struct Failure: Codable, Sendable, Equatable {
        public var code: String
        public var message: String
    }

    public var id: String
    public var name: String?
    public var state: State
    public var rate: Int
    public var channels: Int
    public var format: String
    public var segmentSeconds: Int
    public var maxSeconds: Double?
    /// Wall-clock time of the first frame (ISO 8601, UTC), or of the request before any audio.
    public var startedAt: String
    /// Wall-clock time just after the last frame, once finished.
    public var endedAt: String?
    /// Frames recorded, silence of gaps included.
    public var frames: Int
    /// Bytes of the segment files.
    public var bytes: Int
    public var segments: [Segment]
    public var gaps: [Gap]
    public var failure: Failure?
    /// Why a stopped recording stopped: `request` or `shutdown`.
    public var stopReason: String?
    /// The capture processing in effect (`aec`, `ns`, `agc`); absent in recordings made without it.
    public var processing: VoiceProcessing?
    /// How the segments are stored; absent in recordings made before codecs (WAV).
    public var codec: RecordingCodec?
    /// Opus bits per second.
    public var bitrate: Int?

    /// The codec, WAV when none is stored.
    var segmentCodec: RecordingCodec { codec ?? .wav }

    /// The file format.
    var audioFormat: AudioFormat {
        AudioFormat(rate: rate, channels: channels, sampleFormat: SampleFormat(rawValue: format) ?? .s16le)
    }

    /// Seconds of audio recorded.
    public var durationSeconds: Double { Double(frames) / Double(max(rate, 1)) }

    /// The wall-clock time `frames` frames after the start.
    func time(atFrame frame: Int) -> String {
        guard let start = Timestamp.parse(startedAt) else { return startedAt }
        return Timestamp.format(start.addingTimeInterval(Double(frame) / Double(max(rate, 1))))
    }
}
