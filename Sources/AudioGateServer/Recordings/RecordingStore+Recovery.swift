import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension RecordingStore {
    /// Reads every recording in the directory, repairing the ones the server was writing when it
    /// died; answers them with the bytes the directory holds.
    func loadAll() -> (recordings: [RecordingInfo], bytes: Int) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        var recordings: [RecordingInfo] = []
        var bytes = 0
        // A removal the server did not finish before it stopped.
        for name in names where name.hasPrefix(Self.detachedPrefix) {
            _ = purge(root + "/" + name)
        }
        for name in names.sorted() where RecordingID.isValid(name) {
            let folder = directory(of: name)
            var status = stat()
            guard lstat(folder, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
                logger.warning("skipping \(folder): not a folder (a symbolic link is refused)")
                continue
            }
            try? RecordingFile.remove(folder + "/" + Self.metadataFile + ".tmp")
            // Every recording is finished once loaded: none needs its reserve any more.
            release(name)
            bytes += Self.size(ofDirectory: folder)
            var info: RecordingInfo
            do throws(RecordingError) {
                info = try load(name)
            } catch {
                logger.warning("skipping \(folder): \(error.message)")
                continue
            }
            if info.state == .recording {
                info = repaired(info)
                do {
                    try save(info)
                } catch {
                    logger.error("could not save the repaired recording \(name): \(error)")
                }
                logger.notice(
                    "recording \(name) was interrupted; kept \(String(format: "%.1f", info.durationSeconds)) s in \(info.segments.count) segments")
            }
            recordings.append(info)
        }
        return (recordings, bytes)
    }

    /// Largest `recording.json` read (a week of 1 s segments is about 200 MB; a day, 30).
    static let metadataLimit = 256 << 20

    /// A recording's `recording.json`, checked: its id is its folder's, its segments are named as the
    /// server names them and its numbers are in range; nothing it names is opened before that.
    func load(_ id: String) throws(RecordingError) -> RecordingInfo {
        let bytes = try RecordingFile.read(path(of: id, file: Self.metadataFile), limit: Self.metadataLimit)
        guard let info = try? Self.decoder.decode(RecordingInfo.self, from: Data(bytes)) else {
            throw RecordingError(.io, "its \(Self.metadataFile) is not readable")
        }
        guard info.id == id else { throw RecordingError(.io, "its \(Self.metadataFile) is for recording \(info.id)") }
        if let damage = info.damage { throw RecordingError(.io, "its \(Self.metadataFile) is damaged: \(damage)") }
        return info
    }

    /// The recording as found on disk: complete segments as listed, then every later segment file
    /// repaired and counted from its size.
    func repaired(_ original: RecordingInfo) -> RecordingInfo {
        var info = original
        let format = info.audioFormat
        let codec = info.segmentCodec
        var segments = Array(info.segments.prefix { $0.complete })
        var frame = segments.last.map { $0.startFrame + $0.frames } ?? 0
        while true {
            let index = segments.count
            let file = Self.segmentFile(index, codec: codec)
            let path = path(of: info.id, file: file)
            var status = stat()
            guard lstat(path, &status) == 0 else { break }
            let frames: Int
            var bytes: Int?
            do throws(RecordingError) {
                switch codec {
                case .wav:
                    frames = try SegmentFile.repair(path: path, format: format)
                case .flac, .opus:
                    (frames, bytes) = try EncodedSegmentFile.repair(path: path, codec: codec, format: format)
                }
            } catch {
                logger.error("could not repair \(path): \(error)")
                break
            }
            guard frames > 0 else { break }
            segments.append(
                RecordingInfo.Segment(
                    index: index, file: file, url: Self.segmentURL(id: info.id, index: index, codec: codec), startFrame: frame,
                    frames: frames, startTime: info.time(atFrame: frame), complete: true, repaired: true, bytes: bytes))
            frame += frames
        }
        info.segments = segments
        info.frames = frame
        // A WAV segment is its header and samples; an encoded one lists its own size.
        info.bytes = segments.reduce(0) { $0 + ($1.bytes ?? SegmentFile.headerBytes + $1.frames * format.bytesPerFrame) }
        info.gaps.removeAll { $0.startFrame >= frame }
        info.state = .interrupted
        info.endedAt = info.time(atFrame: frame)
        info.failure = RecordingInfo.Failure(
            code: "interrupted", message: "the server stopped while recording; the last segment was repaired")
        return info
    }

    /// Where segment `index` of a recording is downloaded, as stored.
    static func segmentURL(id: String, index: Int, codec: RecordingCodec = .wav) -> String {
        "/v1/recordings/\(id)/segments/\(index).\(codec.fileExtension)"
    }
}
