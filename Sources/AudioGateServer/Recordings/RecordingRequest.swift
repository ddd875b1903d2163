import AudioGateCore
import Foundation

/// The body of `POST /v1/recordings`, decoded and validated.
public struct RecordingRequest: Sendable, Equatable {
    /// Sample formats a recording may be written in (the WAV-native ones).
    public static let formats: [SampleFormat] = [.s16le, .s24le3, .s32le, .f32le]
    /// Allowed segment lengths in seconds.
    public static let segmentSeconds = 1...3600
    /// Longest `max_seconds` (a week).
    public static let maximumSeconds = 7 * 86_400.0
    /// Longest name in bytes.
    public static let maximumNameBytes = 200

    /// Rate, channels and sample format of the files.
    public var format = AudioFormat(rate: 16000, channels: 1, sampleFormat: .s16le)
    /// Length of every segment but the last, in seconds.
    public var segmentSeconds = 30
    /// Stop after this many seconds of audio (nil: until stopped).
    public var maxSeconds: Double?
    /// A label for people; not used in file names.
    public var name: String?
    /// Echo cancellation, noise suppression and gain (`aec`, `ns`, `agc`; recordings have no events).
    public var processing = VoiceProcessing()
    /// How the segments are stored.
    public var codec = RecordingCodec.wav
    /// Opus only: bits per second (nil for the lossless codecs).
    public var bitrate: Int?

    /// The defaults: 16 kHz mono s16le in 30 s segments, no time limit.
    public init() {}

    private struct Body: Decodable {
        var rate: Int?
        var channels: Int?
        var format: String?
        var segmentSeconds: Int?
        var maxSeconds: Double?
        var name: String?
        var aec: Bool?
        var ns: Bool?
        var agc: Bool?
        var codec: String?
        var bitrate: Int?
    }

    /// Decodes a JSON body (an empty body takes every default); throws a 400 naming the bad field.
    public init(json data: Data) throws(RecordingError) {
        guard !data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) else { return }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let body: Body
        do {
            body = try decoder.decode(Body.self, from: data)
        } catch let DecodingError.typeMismatch(_, context) {
            throw RecordingError(.badBody, "'\(Self.field(context))' has the wrong type")
        } catch let DecodingError.valueNotFound(_, context) {
            throw RecordingError(.badBody, "'\(Self.field(context))' has the wrong type")
        } catch {
            throw RecordingError(
                .badBody,
                "expected a JSON object such as {\"rate\":16000,\"channels\":1,\"format\":\"s16le\",\"segment_seconds\":30,\"max_seconds\":null,\"name\":\"...\"}"
            )
        }
        if let rate = body.rate {
            guard ClientFormats.captureRates.contains(rate) else {
                throw RecordingError(.badBody, "'rate' must be one of \(ClientFormats.captureRates.map(String.init).joined(separator: ", "))")
            }
            format.rate = rate
        }
        if let channels = body.channels {
            guard ClientFormats.channels.contains(channels) else {
                throw RecordingError(.badBody, "'channels' must be 1 or 2")
            }
            format.channels = channels
        }
        if let text = body.format {
            guard let sampleFormat = SampleFormat(rawValue: text), Self.formats.contains(sampleFormat) else {
                throw RecordingError(.badBody, "'format' must be one of \(Self.formats.map(\.rawValue).joined(separator: ", "))")
            }
            format.sampleFormat = sampleFormat
        }
        if let seconds = body.segmentSeconds {
            guard Self.segmentSeconds.contains(seconds) else {
                throw RecordingError(
                    .badBody,
                    "'segment_seconds' must be an integer from \(Self.segmentSeconds.lowerBound) to \(Self.segmentSeconds.upperBound)")
            }
            segmentSeconds = seconds
        }
        if let seconds = body.maxSeconds {
            guard seconds.isFinite, seconds > 0, seconds <= Self.maximumSeconds else {
                throw RecordingError(.badBody, "'max_seconds' must be null or a number above 0 and at most \(Int(Self.maximumSeconds))")
            }
            maxSeconds = seconds
        }
        if let name = body.name {
            guard name.utf8.count <= Self.maximumNameBytes,
                !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw RecordingError(.badBody, "'name' must be at most \(Self.maximumNameBytes) bytes without control characters")
            }
            self.name = name
        }
        try applyCodec(body.codec, bitrate: body.bitrate, formatGiven: body.format != nil)
        processing = VoiceProcessing(aec: body.aec ?? false, ns: body.ns ?? false, agc: body.agc ?? false)
        if let problem = processing.problem(with: format) { throw RecordingError.parameter(problem.parameter, problem.allowed) }
    }

    /// Checks `codec` and `bitrate` against the format: FLAC holds 16 or 24 bits, Opus takes its own
    /// rates and is fed floats (a `format` does not apply), `bitrate` is for Opus only.
    private mutating func applyCodec(_ name: String?, bitrate: Int?, formatGiven: Bool) throws(RecordingError) {
        if let name {
            guard let value = RecordingCodec(rawValue: name) else {
                throw RecordingError(.badBody, "'codec' must be one of \(RecordingCodec.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            codec = value
        }
        switch codec {
        case .wav:
            break
        case .flac:
            guard RecordingCodec.flacFormats.contains(format.sampleFormat) else {
                throw RecordingError(.badBody, "'format' must be s16le with codec flac (FLAC segments are 16-bit)")
            }
        case .opus:
            guard !formatGiven else {
                throw RecordingError(.badBody, "'format' does not apply to codec opus (set 'bitrate' instead)")
            }
            guard RecordingCodec.opusRates.contains(format.rate) else {
                throw RecordingError(
                    .badBody,
                    "'rate' must be one of \(RecordingCodec.opusRates.map(String.init).joined(separator: ", ")) with codec opus")
            }
            format.sampleFormat = .f32le
            self.bitrate = RecordingCodec.defaultOpusBitrate
        }
        if let bitrate {
            guard codec == .opus else { throw RecordingError(.badBody, "'bitrate' applies to codec opus only") }
            guard RecordingCodec.opusBitrates.contains(bitrate) else {
                throw RecordingError(
                    .badBody,
                    "'bitrate' must be from \(RecordingCodec.opusBitrates.lowerBound) to \(RecordingCodec.opusBitrates.upperBound) bits per second")
            }
            self.bitrate = bitrate
        }
    }

    private static func field(_ context: DecodingError.Context) -> String {
        let key = context.codingPath.last?.stringValue ?? "body"
        // Names come back in the client's spelling: snake_case.
        return key.reduce(into: "") { name, character in
            if character.isUppercase { name += "_" + character.lowercased() } else { name.append(character) }
        }
    }

    /// Frames per segment.
    var segmentFrames: Int { segmentSeconds * format.rate }

    /// Frames after which the recording completes, if limited.
    var maxFrames: Int? { maxSeconds.map { max(1, Int(($0 * Double(format.rate)).rounded())) } }
}
