import AudioGateCore
import AudioGateTestSupport
import Foundation
import HummingbirdTesting
import Logging
import Synchronization
import Testing

@testable import AudioGateServer

#if canImport(Glibc)
import Glibc
#endif

/// The data folder is checked, not trusted: whoever can write it cannot make the server read or
/// write anything outside it, and what the server makes there is owner-only whatever the umask.
@Suite("recordings: the data folder is checked, not trusted", .serialized)
struct RecordingDataFolderTests {
    /// A file outside the data folder that a link or a forged name points at: a valid WAV, so that
    /// a server following the link would serve it or repair it (truncate its odd byte, rewrite its
    /// header) without complaint. Its access and modification times are set far back, so that any
    /// read moves the first (the kernel updates an access time older than a day) and any write the second.
    struct Outside {
        /// 2001-01-01, seconds since the epoch.
        static let past = 978_307_200

        let folder: String
        let path: String
        let content: [UInt8]

        init() throws {
            folder = RecordingFixtures.temporaryDirectory("outside")
            path = folder + "/secret.wav"
            let samples = SampleConversion.encode(Signal.sine(frequency: 440, rate: 16000, seconds: 0.5, amplitude: 0.3), format: .s16le)
            content = WAVHeader.encode(format: AudioFormat(rate: 16000, channels: 1, sampleFormat: .s16le), dataByteCount: 1000) + samples + [7]
            try Data(content).write(to: URL(fileURLWithPath: path))
            let times = [timespec(tv_sec: Self.past, tv_nsec: 0), timespec(tv_sec: Self.past, tv_nsec: 0)]
            try #require(utimensat(AT_FDCWD, path, times, 0) == 0)
        }

        /// Whether the file was neither read nor written since it was made.
        func isUntouched() throws -> Bool {
            var info = stat()
            try #require(stat(path, &info) == 0, "stat \(path)")
            let unread = info.st_atim.tv_sec == Self.past
            let unwritten = info.st_mtim.tv_sec == Self.past
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            return unread && unwritten && bytes == content
        }
    }

    /// Every line logged, for the tests that count them.
    final class LogLines: Sendable {
        let lines = Mutex<[String]>([])

        var logger: Logger {
            var logger = Logger(label: "audiogate-test") { _ in Handler(box: self) }
            logger.logLevel = .warning
            return logger
        }

        func matching(_ text: String) -> [String] { lines.withLock { $0.filter { $0.contains(text) } } }

        struct Handler: LogHandler {
            let box: LogLines
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .trace

            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }

            func log(event: LogEvent) {
                let text = "\(event.level) \(event.message) \(event.metadata ?? [:])"
                box.lines.withLock { $0.append(text) }
            }
        }
    }

    /// Downloads and exports of segment 0 and of the whole recording: each status and body.
    static func fetchAll(_ client: some TestClientProtocol, _ id: String) async throws -> [(String, Int, [UInt8])] {
        var answers: [(String, Int, [UInt8])] = []
        for path in ["segments/0.wav", "segments/0.mp3", "audio.wav", "audio.flac"] {
            let response = try await client.execute(uri: "/v1/recordings/\(id)/\(path)", method: .get)
            answers.append((path, Int(response.status.code), Array(buffer: response.body)))
        }
        let ranged = try await client.execute(uri: "/v1/recordings/\(id)/segments/0.wav", method: .get, headers: [.range: "bytes=100-199"])
        answers.append(("segments/0.wav bytes=100-199", Int(ranged.status.code), Array(buffer: ranged.body)))
        return answers
    }

    /// Whether `needle` occurs in `haystack`.
    static func contains(_ haystack: [UInt8], _ needle: ArraySlice<UInt8>) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    @Test("a segment that is a symbolic link to a file outside is refused on download and export, and nothing of it is read")
    func symlinkedSegment() async throws {
        let outside = try Outside()
        let data = RecordingFixtures.temporaryDirectory("symlink")
        let id = "20260101-000000-linked"
        try RecordingFixtures.writeFinished(in: data, id: id, seconds: 0.5, age: 0)
        let segment = data + "/recordings/\(id)/" + RecordingStore.segmentFile(0)
        try #require(unlink(segment) == 0 && symlink(outside.path, segment) == 0)

        let log = LogLines()
        let server = AudioGateServer(configuration: TestServer.configuration { $0.dataDirectory = data }, logger: log.logger)
        try await server.makeApplication().test(.live) { client in
            // Listed as it was written: the link is found when the file is opened, not before.
            let details = try await client.execute(uri: "/v1/recordings/\(id)", method: .get)
            #expect(details.status == .ok)
            for (path, status, body) in try await Self.fetchAll(client, id) {
                #expect(status == 500, "\(path) answered \(status)")
                let message = String(decoding: body, as: UTF8.self)
                #expect(message.contains("refused") && message.contains("symbolic link"), "\(path): \(message)")
                #expect(!Self.contains(body, outside.content[100..<200]), "\(path) sent the outside file's bytes")
            }
        }
        #expect(log.matching("refused").count == 5, "one line per refused request: \(log.lines.withLock { $0 })")
        #expect(try outside.isUntouched())
    }

    @Test(
        "a forged segment name in recording.json refuses the recording with one log line; nothing it names is opened",
        arguments: ["../../../OUTSIDE/secret.wav", "ABSOLUTE", "sub/segment-00000.wav", "segment-00000.wav/..", "segment-00001.wav", ""])
    func forgedName(_ forged: String) async throws {
        let outside = try Outside()
        let folderName = String(outside.folder.split(separator: "/").last ?? "")
        let name = forged == "ABSOLUTE" ? outside.path : forged.replacingOccurrences(of: "OUTSIDE", with: folderName)
        let data = RecordingFixtures.temporaryDirectory("forged")
        let store = try RecordingStore(dataDirectory: data, logger: TestServer.logger)
        // A finished one, refused on download and export, and one the server was writing when it
        // died, refused before any repair.
        let finished = "20260101-000000-forged"
        let running = "20260101-000001-forged"
        var infos = [try RecordingFixtures.writeFinished(in: data, id: finished, seconds: 0.5, age: 0)]
        var cut = try RecordingFixtures.writeFinished(in: data, id: running, seconds: 0.5, age: 0)
        cut.state = .recording
        infos.append(cut)
        for var info in infos {
            info.segments[0].file = name
            try store.save(info)
        }
        // The relative name reaches the outside file from the recording's folder (stat reads no content).
        if forged.hasPrefix("..") {
            var reached = stat()
            var target = stat()
            #expect(stat(store.path(of: finished, file: name), &reached) == 0 && stat(outside.path, &target) == 0
                && reached.st_ino == target.st_ino && reached.st_dev == target.st_dev)
        }
        let metadata = try [UInt8](Data(contentsOf: URL(fileURLWithPath: store.path(of: running, file: RecordingStore.metadataFile))))

        let log = LogLines()
        let server = AudioGateServer(configuration: TestServer.configuration { $0.dataDirectory = data }, logger: log.logger)
        try await server.makeApplication().test(.live) { client in
            let list = try await client.execute(uri: "/v1/recordings", method: .get)
            #expect(list.json.objects("recordings").isEmpty, "\(String(buffer: list.body))")
            for id in [finished, running] {
                #expect(try await client.execute(uri: "/v1/recordings/\(id)", method: .get).status == .notFound)
                for (path, status, body) in try await Self.fetchAll(client, id) {
                    #expect(status == 404, "\(id)/\(path) answered \(status)")
                    #expect(!Self.contains(body, outside.content[100..<200]), "\(path) sent the outside file's bytes")
                }
                let lines = log.matching(id)
                #expect(lines.count == 1 && lines.allSatisfy { $0.contains("damaged") && $0.contains("segment 0") }, "\(lines)")
            }
        }
        // The interrupted recording was neither repaired nor saved again, and its segment is as written.
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: store.path(of: running, file: RecordingStore.metadataFile)))) == metadata)
        #expect(try outside.isUntouched())
    }

    @Test("crash repair at start: a segment, the metadata, its temporary file or the recording's folder as a link is refused, the outside file untouched",
          arguments: ["wav", "flac", "recording.json", "recording.json.tmp", "recording.json.reserve", "folder"])
    func repairRefusesLinks(_ what: String) throws {
        let outside = try Outside()
        let data = RecordingFixtures.temporaryDirectory("repair-link")
        let log = LogLines()
        let store = try RecordingStore(dataDirectory: data, logger: log.logger)
        let id = "20260101-000000-repair"
        var info = try RecordingFixtures.writeFinished(in: data, id: id, seconds: 0.5, age: 0)
        info.state = .recording
        if what == "flac" {
            info.codec = .flac
            info.segments = []
            info.frames = 0
            try FileManager.default.removeItem(atPath: store.path(of: id, file: RecordingStore.segmentFile(0)))
        }
        try store.save(info)
        let folder = store.directory(of: id)
        switch what {
        case "wav", "flac":
            // The next segment after the listed ones: the one a repair opens and rewrites.
            let next = RecordingStore.segmentFile(info.segments.count, codec: info.segmentCodec)
            try #require(symlink(outside.path, folder + "/" + next) == 0)
        case "recording.json":
            let path = store.path(of: id, file: what)
            try FileManager.default.moveItem(atPath: path, toPath: outside.folder + "/" + what)
            try #require(symlink(outside.folder + "/" + what, path) == 0)
        case "folder":
            // The whole recording moved outside, and a link left in its place.
            try FileManager.default.moveItem(atPath: folder, toPath: outside.folder + "/moved")
            try #require(symlink(outside.folder + "/moved", folder) == 0)
        default:
            try #require(symlink(outside.path, store.path(of: id, file: what)) == 0)
        }
        let found = store.loadAll().recordings
        switch what {
        case "wav", "flac":
            // Repaired up to the link, which is left alone.
            #expect(found.map(\.id) == [id] && found.first?.state == .interrupted)
            #expect(found.first?.segments.count == (what == "wav" ? 1 : 0))
            #expect(log.matching("could not repair").count == 1 && log.matching("symbolic link").count == 1, "\(log.lines.withLock { $0 })")
        case "recording.json", "folder":
            #expect(found.isEmpty)
            #expect(log.matching(id).count == 1 && log.matching("symbolic link").count == 1, "\(log.lines.withLock { $0 })")
            if what == "folder" {
                #expect(RecordingFixtures.files(under: outside.folder + "/moved")
                    == [RecordingStore.metadataFile, RecordingStore.segmentFile(0)].sorted())
            }
        default:
            // The link is removed, not what it points at; the recording is repaired as usual.
            #expect(found.map(\.id) == [id] && found.first?.state == .interrupted)
            var status = stat()
            #expect(lstat(store.path(of: id, file: what), &status) != 0)
        }
        #expect(try outside.isUntouched())
    }

    @Test("writes never go through a link: a temporary metadata file that is a symbolic or hard link, or a segment name taken by a link, fail; the target untouched")
    func writesRefuseLinks() throws {
        let outside = try Outside()
        let (writer, store) = try RecordingUnitTests.writer()
        let id = writer.info.id
        let temporary = store.path(of: id, file: RecordingStore.metadataFile + ".tmp")
        // A hard link: the same file under a second name, which O_TRUNC at open would have emptied.
        try #require(link(outside.path, temporary) == 0)
        #expect(throws: RecordingError.self) { try store.save(writer.info) }
        try #require(unlink(temporary) == 0 && symlink(outside.path, temporary) == 0)
        #expect(throws: RecordingError.self) { try store.save(writer.info) }
        try #require(symlink(outside.path, store.path(of: id, file: RecordingStore.segmentFile(0))) == 0)
        let chunk = RecordingUnitTests.ramp(chunks: 1, frames: 1600, from: 0)[0]
        #expect(throws: RecordingError.self) { try writer.write(chunk, timestamp: 1_000_000_000, gapReason: nil) }
        #expect(try outside.isUntouched())
    }

    @Test("a new recording's folder is 0700 and its files 0600 under umask 022")
    func modes() throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        let (writer, store) = try RecordingUnitTests.writer()
        let data = String(store.root.dropLast("/recordings".count))
        let id = writer.info.id
        try store.reserve(id)
        var timestamp: UInt64 = 1_000_000_000
        for chunk in RecordingUnitTests.ramp(chunks: 12, frames: 1600, from: 0) {
            try writer.write(chunk, timestamp: timestamp, gapReason: nil)
            timestamp += 100_000_000
        }
        let format = AudioFormat(rate: 16000, channels: 1, sampleFormat: .s16le)
        let flac = try EncodedSegmentFile(
            creating: store.path(of: id, file: RecordingStore.segmentFile(9, codec: .flac)), codec: .flac, format: format, bitrate: nil)
        try flac.finish()
        func mode(_ path: String) -> mode_t {
            var info = stat()
            return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
        }
        #expect(mode(store.root) == 0o700)
        #expect(mode(store.directory(of: id)) == 0o700)
        let files = RecordingFixtures.files(under: store.directory(of: id))
        #expect(files.contains(RecordingStore.metadataFile) && files.contains(RecordingStore.reserveFile) && files.contains("segment-00001.wav")
            && files.contains("segment-00009.flac"), "\(files)")
        for file in files {
            #expect(mode(store.path(of: id, file: file)) == 0o600, "\(file): \(String(mode(store.path(of: id, file: file)), radix: 8))")
        }
        writer.finish(.stopped, stopReason: "request")
        #expect(mode(store.path(of: id, file: RecordingStore.metadataFile)) == 0o600)
        // Data folders from before, made under a looser umask, are owner-only again at the next start.
        chmod(store.root, 0o755)
        _ = try RecordingStore(dataDirectory: data, logger: TestServer.logger)
        #expect(mode(store.root) == 0o700)
    }
}
