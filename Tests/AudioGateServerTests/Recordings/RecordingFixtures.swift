import AudioGateCore
import AudioGateTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

@testable import AudioGateServer

#if canImport(Glibc)
import Glibc
#endif

/// Data directories, WAV reading and HTTP shortcuts for the recording tests.
enum RecordingFixtures {
    /// A fresh empty directory under the temporary directory.
    static func temporaryDirectory(_ label: String = "recordings") -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("audiogate-\(label)-\(UUID().uuidString.prefix(8))").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Every file below `path`, relative to it.
    static func files(under path: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: path)
        var files: [String] = []
        while let next = enumerator?.nextObject() as? String { files.append(next) }
        return files.sorted()
    }

    /// A WAV file's format and samples as floats.
    static func readWAV(_ bytes: [UInt8]) throws -> (format: AudioFormat, samples: [Float], dataBytes: Int) {
        let header = try WAVHeader.parse(bytes)
        let count = header.dataByteCount ?? 0
        try #require(bytes.count >= header.dataOffset + count, "the header claims more data than the file has")
        let data = Array(bytes[header.dataOffset..<(header.dataOffset + count)])
        return (header.format, SampleConversion.decode(data, format: header.format.sampleFormat), count)
    }

    /// A finished recording written the way the server writes one, ended `age` seconds ago.
    @discardableResult
    static func writeFinished(in dataDirectory: String, id: String, seconds: Double, rate: Int = 16000, age: TimeInterval)
        throws -> RecordingInfo
    {
        let store = try RecordingStore(dataDirectory: dataDirectory, logger: TestServer.logger)
        try store.create(id)
        let format = AudioFormat(rate: rate, channels: 1, sampleFormat: .s16le)
        let frames = Int(seconds * Double(rate))
        let segment = try SegmentFile(creating: store.path(of: id, file: RecordingStore.segmentFile(0)), format: format)
        let samples = SampleConversion.encode(Signal.sine(frequency: 300, rate: rate, seconds: seconds, amplitude: 0.2), format: .s16le)
        try samples.withUnsafeBytes { try segment.append($0) }
        try segment.finish()
        let ended = Date().addingTimeInterval(-age)
        let info = RecordingInfo(
            id: id, name: "fixture", state: .stopped, rate: rate, channels: 1, format: "s16le", segmentSeconds: 30,
            maxSeconds: nil, startedAt: Timestamp.format(ended.addingTimeInterval(-seconds)),
            endedAt: Timestamp.format(ended), frames: frames, bytes: 44 + frames * 2,
            segments: [
                .init(
                    index: 0, file: RecordingStore.segmentFile(0), url: RecordingStore.segmentURL(id: id, index: 0),
                    startFrame: 0, frames: frames, startTime: Timestamp.format(ended.addingTimeInterval(-seconds)),
                    complete: true, repaired: false)
            ], gaps: [], failure: nil, stopReason: "request")
        try store.save(info)
        return info
    }

    /// Starts a recording over HTTP and answers its id.
    static func start(_ client: some TestClientProtocol, _ body: String) async throws -> String {
        let response = try await client.execute(
            uri: "/v1/recordings", method: .post, headers: [.contentType: "application/json"],
            body: ByteBuffer(string: body))
        try #require(response.status == .created, "POST /v1/recordings answered \(response.status): \(String(buffer: response.body))")
        return try #require(response.json["id"] as? String)
    }

    /// A recording's details.
    static func details(_ client: some TestClientProtocol, _ id: String) async throws -> [String: Any] {
        let response = try await client.execute(uri: "/v1/recordings/\(id)", method: .get)
        try #require(response.status == .ok)
        return response.json
    }

    /// Polls until the recording's state is not `recording`; answers the details.
    static func waitUntilFinished(_ client: some TestClientProtocol, _ id: String, seconds: Double) async throws
        -> [String: Any]
    {
        let deadline = MonotonicClock.nowMilliseconds() + seconds * 1000
        while MonotonicClock.nowMilliseconds() < deadline {
            let details = try await details(client, id)
            if details["state"] as? String != "recording" { return details }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try await details(client, id)
    }

    /// Downloads segment `index` as bytes.
    static func segment(_ client: some TestClientProtocol, _ id: String, _ index: Int) async throws -> [UInt8] {
        let response = try await client.execute(uri: "/v1/recordings/\(id)/segments/\(index).wav", method: .get)
        try #require(response.status == .ok)
        return Array(buffer: response.body)
    }

    /// Mounts a tmpfs of `kilobytes` at `path` (needs root); false where mounting is not allowed.
    static func mountTmpfs(at path: String, kilobytes: Int) -> Bool {
        TestCard.run("mount", "-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", path) == 0
    }

    static func unmount(_ path: String) {
        TestCard.run("umount", path)
    }

    /// Whether this machine lets the tests mount a small file system to fill up.
    static let canMountTmpfs: Bool = {
        let path = temporaryDirectory("mount-probe")
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard mountTmpfs(at: path, kilobytes: 64) else { return false }
        unmount(path)
        return true
    }()
}

extension [String: Any] {
    /// An array of objects under `key`.
    func objects(_ key: String) -> [[String: Any]] { self[key] as? [[String: Any]] ?? [] }

    /// An integer under `key`.
    func int(_ key: String) -> Int? { (self[key] as? NSNumber)?.intValue }
}
