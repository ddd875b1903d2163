/// The compressed formats the server decodes, by container.
public enum AudioContainer: String, Sendable, CaseIterable {
    case mp3
    case ogg
    case flac
    case webm

    /// libavformat's demuxer for the container; nothing else is ever probed.
    var demuxer: String {
        switch self {
        case .mp3: "mp3"
        case .ogg: "ogg"
        case .flac: "flac"
        case .webm: "matroska"
        }
    }

    /// Media types naming the container.
    static let mediaTypes: [String: AudioContainer] = [
        "audio/mpeg": .mp3, "audio/mp3": .mp3, "audio/mpeg3": .mp3, "audio/x-mpeg": .mp3,
        "audio/ogg": .ogg, "audio/opus": .ogg, "audio/vorbis": .ogg, "application/ogg": .ogg,
        "audio/flac": .flac, "audio/x-flac": .flac,
        "audio/webm": .webm, "video/webm": .webm, "audio/x-matroska": .webm, "audio/matroska": .webm,
    ]

    /// The container a media type (parameters ignored) names, if any.
    static func from(contentType value: String?) -> AudioContainer? {
        ContentType.mediaType(value).flatMap { mediaTypes[$0] }
    }

    /// Bytes needed by `sniff`.
    static let sniffBytes = 4

    /// The container the first bytes announce (magic numbers), if any.
    static func sniff(_ head: some Collection<UInt8>) -> AudioContainer? {
        let bytes = Array(head.prefix(sniffBytes))
        guard bytes.count >= 4 else { return nil }
        if bytes.starts(with: Array("OggS".utf8)) { return .ogg }
        if bytes.starts(with: Array("fLaC".utf8)) { return .flac }
        if bytes == [0x1A, 0x45, 0xDF, 0xA3] { return .webm }
        if bytes.starts(with: Array("ID3".utf8)) { return .mp3 }
        if isMPEGAudioFrameHeader(bytes) { return .mp3 }
        return nil
    }

    /// An MPEG-1/2/2.5 Layer III frame header with a valid bitrate and sample rate index.
    static func isMPEGAudioFrameHeader(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] & 0xE0 == 0xE0 else { return false }
        let version = (bytes[1] >> 3) & 0x03
        let layer = (bytes[1] >> 1) & 0x03
        let bitrate = bytes[2] >> 4
        let rate = (bytes[2] >> 2) & 0x03
        return version != 1 && layer == 1 && bitrate != 0 && bitrate != 15 && rate != 3
    }
}

import Foundation
