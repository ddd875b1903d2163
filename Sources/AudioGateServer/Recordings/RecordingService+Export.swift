import AudioGateCore

extension RecordingService {
    /// The timeline of a recording (every segment, silence where it has none), or of one segment,
    /// to convert to `kind`.
    func export(_ id: String, segment index: Int?, kind: RecordingExport.Kind) throws(APIError) -> RecordingExport {
        let store = try availableStore()
        let info = try info(id)
        guard info.segmentCodec == .wav else {
            // Conversions read PCM from WAV segments; FLAC and Opus segments download as stored.
            let stored = info.segmentCodec.fileExtension
            throw .parameter(
                "extension",
                "recording \(id) is stored as \(info.segmentCodec.rawValue): download its segments as <n>.\(stored); converting it is not offered")
        }
        var parts: [RecordingExport.Part] = []
        if let index {
            guard info.segments.indices.contains(index) else {
                throw APIError(.notFound, "recording \(id) has no segment \(index)")
            }
            let segment = info.segments[index]
            parts = [.wav(path: store.path(of: id, file: segment.file), frames: segment.frames)]
        } else {
            var frame = 0
            for segment in info.segments.sorted(by: { $0.startFrame < $1.startFrame }) {
                if segment.startFrame > frame { parts.append(.silence(frames: segment.startFrame - frame)) }
                parts.append(.wav(path: store.path(of: id, file: segment.file), frames: segment.frames))
                frame = max(frame, segment.startFrame + segment.frames)
            }
            // Gaps after the last segment are silence the timeline counts too.
            if info.frames > frame { parts.append(.silence(frames: info.frames - frame)) }
        }
        let base = index.map { "\(id)-\($0)" } ?? id
        return RecordingExport(parts: parts, format: info.audioFormat, kind: kind, name: "\(base).\(kind.rawValue)")
    }
}
