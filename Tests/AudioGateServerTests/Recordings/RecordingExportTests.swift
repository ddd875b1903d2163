import AudioGateCore
import AudioGateTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import AudioGateServer

/// Segments and whole recordings converted on the fly, judged by ffmpeg and ffprobe.
@Suite("recording export", .serialized)
struct RecordingExportTests {
    /// (extension, codec ffprobe names, lossless, one codec frame in seconds at 16 kHz)
    static let kinds: [(String, String, Bool, Double)] = [
        ("wav", "pcm_s16le", true, 0), ("flac", "flac", true, 0.1), ("ogg", "opus", false, 0.02),
        ("mp3", "mp3", false, 576.0 / 16000), ("m4a", "aac", false, 1024.0 / 16000),
    ]

    static func toneLevel(_ samples: [Float], rate: Int) -> Double {
        20 * log10(Goertzel.amplitude(samples, frequency: CaptureTonePlayer.frequency, rate: rate))
    }

    @Test("every export format of a whole recording and of a segment: length, pitch, level; m4a has moov before mdat")
    func formats() async throws {
        let data = RecordingFixtures.temporaryDirectory()
        let (_, app) = TestServer.make(TestServer.configuration { $0.dataDirectory = data })
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        try await app.test(.live) { client in
            let id = try await RecordingFixtures.start(client, #"{"segment_seconds":2,"max_seconds":5}"#)
            let details = try await RecordingFixtures.waitUntilFinished(client, id, seconds: 15)
            #expect(details.objects("segments").map { $0.int("frames") } == [32000, 32000, 16000])
            let wav = try RecordingFixtures.readWAV(try await RecordingFixtures.segment(client, id, 1))
            let reference = Self.toneLevel(wav.samples, rate: 16000)

            for (ext, codec, lossless, frameSeconds) in Self.kinds {
                for (path, seconds) in [("audio.\(ext)", 5.0), ("segments/1.\(ext)", 2.0)] {
                    let response = try await client.execute(uri: "/v1/recordings/\(id)/\(path)", method: .get)
                    #expect(response.status == .ok, "\(path)")
                    let bytes = Array(buffer: response.body)
                    if ext == "m4a" {
                        let boxes = MP4Boxes.topLevel(bytes)
                        let moov = boxes.firstIndex(of: "moov") ?? .max
                        #expect(moov < (boxes.firstIndex(of: "mdat") ?? -1), "\(path): \(boxes)")
                    }
                    let decoded = try FFmpegTool.withFile(bytes, fileExtension: ext) { file in
                        #expect(FFmpegTool.audioStream(try FFmpegTool.probe(file))["codec_name"] as? String == codec, "\(path)")
                        return try FFmpegTool.decode(file)
                    }
                    // Opus decodes at 48 kHz whatever rate it was encoded at.
                    #expect(decoded.rate == (codec == "opus" ? 48000 : 16000) && decoded.channels == 1, "\(path)")
                    // AAC's encoder delay is listed as an edit list that ffmpeg honours; allow one frame.
                    #expect(abs(decoded.seconds - seconds) <= max(frameSeconds, 1.0 / 16000), "\(path): \(decoded.seconds) s")
                    let middle = Array(decoded.mono[(decoded.frames / 4)..<(decoded.frames * 3 / 4)])
                    let pitch = Goertzel.dominantFrequency(middle, rate: decoded.rate, near: CaptureTonePlayer.frequency)
                    #expect(abs(pitch - CaptureTonePlayer.frequency) < 1, "\(path): \(pitch) Hz")
                    let level = Self.toneLevel(middle, rate: decoded.rate)
                    RealTime.log("export \(path): \(bytes.count) bytes, \(decoded.seconds) s of \(seconds) s, pitch \(pitch) Hz, tone \(level - reference) dB against the WAV")
                    #expect(abs(level - reference) <= (lossless ? 1 : 2), "\(path): \(level) dB against \(reference) dB")
                }
            }

            for bad in ["audio.xyz", "segments/0.aiff"] {
                let response = try await client.execute(uri: "/v1/recordings/\(id)/\(bad)", method: .get)
                #expect(response.status == .badRequest, "\(bad)")
                #expect((response.json["error"] as? [String: Any])?["message"] as? String ?? "" != "")
            }
            let missing = try await client.execute(uri: "/v1/recordings/\(id)/segments/9.ogg", method: .get)
            #expect(missing.status == .notFound)
        }
    }

    @Test("FLAC and Opus recordings convert too: their segments decoded, resampled and encoded again", arguments: ["flac", "opus"])
    func compressedSources(codec: String) async throws {
        let data = RecordingFixtures.temporaryDirectory()
        let (_, app) = TestServer.make(TestServer.configuration { $0.dataDirectory = data })
        let player = try CaptureTonePlayer()
        defer { player.stop() }
        try await app.test(.live) { client in
            let reference = try await client.execute(uri: "/v1/capture?container=wav&seconds=1", method: .get)
            let level = Self.toneLevel(try WAVFile.read(Array(buffer: reference.body)).1, rate: 16000)
            let id = try await RecordingFixtures.start(client, #"{"segment_seconds":2,"max_seconds":5,"codec":"\#(codec)"}"#)
            let details = try await RecordingFixtures.waitUntilFinished(client, id, seconds: 15)
            #expect(details.objects("segments").map { $0.int("frames") } == [32000, 32000, 16000])
            for (path, seconds, name, frameSeconds) in [
                ("audio.ogg", 5.0, "opus", 0.02), ("audio.mp3", 5.0, "mp3", 576.0 / 16000), ("audio.m4a", 5.0, "aac", 1024.0 / 16000),
                ("audio.flac", 5.0, "flac", 0.1), ("segments/1.m4a", 2.0, "aac", 1024.0 / 16000),
            ] where !(codec == "flac" && path == "audio.flac") {
                let response = try await client.execute(uri: "/v1/recordings/\(id)/\(path)", method: .get)
                #expect(response.status == .ok, "\(codec) \(path): \(String(buffer: response.body).prefix(200))")
                let ext = String(path.split(separator: ".").last!)
                let decoded = try FFmpegTool.withFile(Array(buffer: response.body), fileExtension: ext) { file in
                    #expect(FFmpegTool.audioStream(try FFmpegTool.probe(file))["codec_name"] as? String == name, "\(path)")
                    return try FFmpegTool.decode(file)
                }
                #expect(abs(decoded.seconds - seconds) <= frameSeconds, "\(codec) \(path): \(decoded.seconds) s")
                let middle = Array(decoded.mono[(decoded.frames / 4)..<(decoded.frames * 3 / 4)])
                let pitch = Goertzel.dominantFrequency(middle, rate: decoded.rate, near: CaptureTonePlayer.frequency)
                #expect(abs(pitch - CaptureTonePlayer.frequency) < 1, "\(codec) \(path): \(pitch) Hz")
                // Two lossy steps when the source is Opus; one lossless and one lossy otherwise.
                let measured = Self.toneLevel(middle, rate: decoded.rate)
                #expect(abs(measured - level) <= 2, "\(codec) \(path): \(measured) dB against \(level) dB")
            }
            // WAV of them too: the listed frames exactly, in the recording's format.
            let wav = try await client.execute(uri: "/v1/recordings/\(id)/audio.wav", method: .get)
            #expect(wav.status == .ok)
            let (wavFormat, wavSamples) = try WAVFile.read(Array(buffer: wav.body))
            #expect(wavFormat.rate == 16000 && wavFormat.channels == 1 && wavSamples.count == 80000, "\(wavFormat) \(wavSamples.count)")
            let wavLevel = Self.toneLevel(Array(wavSamples[16000..<64000]), rate: 16000)
            #expect(abs(wavLevel - level) <= 2, "\(codec) audio.wav: \(wavLevel) dB against \(level) dB")
        }
    }
}
