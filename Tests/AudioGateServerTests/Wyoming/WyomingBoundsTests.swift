import AudioGateCore
import Foundation
import NIOCore
import Testing

@testable import AudioGateServer

/// Every number a Wyoming peer sends is bounded before use: lengths and audio fields that overflow,
/// are negative, fractional or oversized give a typed error, never a trap.
@Suite("Wyoming bounds")
struct WyomingBoundsTests {
    private func code(_ header: String, body: String = "") -> WyomingError.Code? {
        var decoder = WyomingFrameDecoder()
        var buffer = ByteBuffer(string: header + "\n" + body)
        do throws(WyomingError) {
            _ = try decoder.next(from: &buffer)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("data_length and payload_length that overflow, are negative, fractional or past the limits are refused")
    func lengths() {
        for name in ["data_length", "payload_length"] {
            for value in ["-1", "-9223372036854775808", "0.5", "1e400", "-1e400", "\"8\"", "true", "[1]", "1e15", "9007199254740993", "9223372036854775807"] {
                #expect(code(#"{"type":"audio-chunk","\#(name)":\#(value)}"#) == .badHeader, "\(name) \(value)")
            }
            let tooLong: WyomingError.Code = name == "data_length" ? .dataTooLong : .payloadTooLong
            for value in ["999999999999999", "4294967296", "1048577"] {
                #expect(code(#"{"type":"audio-chunk","\#(name)":\#(value)}"#) == tooLong, "\(name) \(value)")
            }
        }
        // Both at their limits together: the sum is checked without overflow and waits for the bytes.
        let limits = WyomingLimits()
        #expect(code(#"{"type":"audio-chunk","data_length":\#(limits.maxDataBytes),"payload_length":\#(limits.maxPayloadBytes)}"#) == nil)
        // A header line with no end is refused at the limit.
        #expect(code(String(repeating: " ", count: limits.maxHeaderBytes + 1)) == .headerTooLong)
    }

    @Test("rate, width and channels that overflow or are absurd are refused; timestamps are not used")
    func audioFields() throws {
        func format(_ data: [String: WyomingValue]) -> WyomingError.Code? {
            do throws(WyomingError) {
                _ = try WyomingSndSession.format(of: WyomingEvent(type: "audio-start", data: data), fallback: nil)
                return nil
            } catch {
                return error.code
            }
        }
        let good: [String: WyomingValue] = ["rate": 22050, "width": 2, "channels": 1]
        #expect(format(good) == nil)
        var withTimestamp = good
        for timestamp in [Double.greatestFiniteMagnitude, -1e300, 9.3e18, 0.5] {
            withTimestamp["timestamp"] = .number(timestamp)
            #expect(format(withTimestamp) == nil)
        }
        for field in ["rate", "width", "channels"] {
            for value: WyomingValue in [
                .number(9.3e18), .number(-9.3e18), .number(1e15), .number(-1), .number(0), .number(0.5), .number(.infinity),
                .number(-.infinity), .number(.nan), .number(4_294_967_297), .string("16000"), .null, .bool(true),
            ] {
                var data = good
                data[field] = value
                #expect(format(data) == .badAudio, "\(field) \(value)")
            }
        }
        #expect(WyomingValue.number(9.3e18).int == nil && WyomingValue.number(-1e15).int == nil)
        #expect(WyomingValue.number(999_999_999_999_999).int == 999_999_999_999_999)
    }
}
