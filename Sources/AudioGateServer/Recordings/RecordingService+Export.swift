import AudioGateCore

extension RecordingService {
    /// The timeline of a recording (every segment, silence where it has none), or of one segment,
    /// to convert to `kind`.
    func export(_ id: String, segment index: Int?, kind: RecordingExport.Kind) async throws(RecordingError) -> RecordingExport {
        let store = try availableStore()
        let info = try info(id)
        var parts: [RecordingExport.Part] = []
        if let index {
            guard info.segments.indices.contains(index) else {
                throw RecordingError(.notFound, "recording \(id) has no segment \(index)")
            }
            let segment = info.segments[index]
            parts = [Self.part(info, segment, store: store)]
        } else {
            var frame = 0
            for segment in info.segments.sorted(by: { $0.startFrame < $1.startFrame }) {
                if segment.startFrame > frame { parts.append(.silence(frames: segment.startFrame - frame)) }
                parts.append(Self.part(info, segment, store: store))
                frame = max(frame, segment.startFrame + segment.frames)
            }
            // Gaps after the last segment are silence the timeline counts too.
            if info.frames > frame { parts.append(.silence(frames: info.frames - frame)) }
        }
        try await checkFiles(parts.compactMap(\.path))
        let base = index.map { "\(id)-\($0)" } ?? id
        return RecordingExport(parts: parts, format: info.audioFormat, kind: kind, name: "\(base).\(kind.rawValue)")
    }

    /// A segment as the export reads it: WAV samples as stored, FLAC and Opus decoded.
    private static func part(_ info: RecordingInfo, _ segment: RecordingInfo.Segment, store: RecordingStore) -> RecordingExport.Part {
        let path = store.path(of: info.id, file: segment.file)
        switch info.segmentCodec {
        case .wav: return .wav(path: path, frames: segment.frames)
        case .flac, .opus: return .encoded(path: path, codec: info.segmentCodec, frames: segment.frames, bytes: segment.bytes ?? 0)
        }
    }
}

extension RecordingExport.Part {
    /// The segment file the part is read from (none for silence).
    var path: String? {
        switch self {
        case .wav(let path, _), .encoded(let path, _, _, _): path
        case .silence: nil
        }
    }
}
