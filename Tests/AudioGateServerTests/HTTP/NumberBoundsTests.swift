import AudioGateCore
import Foundation
import Testing

@testable import AudioGateServer

/// Numbers in query strings and JSON bodies: past Int64, negative, not finite or out of range
/// answer a 400 naming the field, never a trap.
@Suite("number bounds of requests")
struct NumberBoundsTests {
    static let overflowing = [
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
        "18446744073709551616", "-1", "0", "1e400", "nan", "inf", "0x10", " 16000", "16000 ",
    ]

    @Test("playback rate and channels past Int64, negative or out of range are a 400 naming them")
    func playbackQuery() {
        for name in ["rate", "channels"] {
            for value in Self.overflowing {
                #expect(throws: PlaybackError.self, "\(name)=\(value)") { try PlaybackParameters(query: [name: value]) }
            }
        }
    }

    @Test("a bitrate past Int64 or over 10 Mbit/s does not parse; one in range does")
    func bitrate() {
        for text in Self.overflowing + ["9223372036854775807k", "9223372036854776kbps", "10001k", "10000001"] {
            #expect(CaptureParameters.parseBitrate(text) == nil, "\(text)")
        }
        #expect(CaptureParameters.parseBitrate("10000k") == 10_000_000)
        #expect(CaptureParameters.parseBitrate("24kbps") == 24000)
    }

    @Test("speech rates and recording numbers past their ranges are a 400")
    func bodies() {
        for rate in ["1e400", "-1e400", "9223372036854775808", "0.49", "2.51", "-0"] {
            #expect("rate \(rate)") {
                try SpeechRequest(json: Data(#"{"text":"hi","rate":\#(rate)}"#.utf8))
            } throws: { error in
                (error as? SpeechError)?.reason == .badBody
            }
        }
        for body in [
            #"{"rate":9223372036854775808}"#, #"{"rate":-16000}"#, #"{"channels":9223372036854775807}"#,
            #"{"segment_seconds":-9223372036854775808}"#, #"{"segment_seconds":1e400}"#, #"{"max_seconds":1e400}"#,
            #"{"max_seconds":-1}"#, #"{"max_seconds":0}"#, #"{"bitrate":9223372036854775807,"codec":"opus","rate":48000}"#,
        ] {
            #expect("\(body)") { try RecordingRequest(json: Data(body.utf8)) } throws: { error in
                (error as? RecordingError)?.reason == .badBody
            }
        }
    }

    @Test("Range headers with numbers past Int64 or past the end are whole, partial within the file or unsatisfiable")
    func byteRanges() {
        for length in [0, 1, 100] {
            for header in [
                "bytes=999999999999999999-", "bytes=-999999999999999999", "bytes=0-999999999999999999",
                "bytes=9223372036854775807-", "bytes=0-9223372036854775807", "bytes=-9223372036854775808",
                "bytes=18446744073709551616-", "bytes=-0", "bytes=0-0", "bytes=99-98", "bytes=--1", "bytes=1e3-",
            ] {
                switch ByteRange(header: header, length: length) {
                case .partial(let range):
                    #expect(range.lowerBound >= 0 && range.upperBound < length, "\(header) of \(length)")
                case .whole, .unsatisfiable:
                    break
                }
            }
        }
    }
}
