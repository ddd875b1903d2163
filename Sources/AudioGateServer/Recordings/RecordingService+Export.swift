import AudioGateCore

extension RecordingService {
    /// The timeline of a recording (every segment, silence where it has none), or of one segment,
    /// to convert to `kind`.
    func export(_ id: String, segment index: Int?, kind: RecordingExport.Kind) throws(APIError) -> RecordingExport {
        let store = try availableStore()
        let info = try info(id)
        let codec = info.segmentCodec
        if codec != .wav, kind == .wav {
            // FLAC and Opus segments are decoded only to be encoded again; WAV of them is not written.
            throw .parameter(
                "extension",
                "recording \(id) is stored as \(codec.rawValue): download its segments as <n>.\(codec.fileExtension), or convert to flac, ogg, mp3 or m4a")
        }
        // A segment as the timeline lists it: WAV samples, or a FLAC or Ogg Opus file to decode.
        func part(_ segment: RecordingInfo.Segment) -> RecordingExport.Part {
            let path = store.path(of: id, file: segment.file)
            switch codec {
            case .wav: return .wav(path: path, frames: segment.frames)
            case .flac: return .encoded(path: path, frames: segment.frames, bytes: segment.bytes ?? 0, container: .flac)
            case .opus: return .encoded(path: path, frames: segment.frames, bytes: segment.bytes ?? 0, container: .ogg)
            }
        }
        var parts: [RecordingExport.Part] = []
        if let index {
            guard info.segments.indices.contains(index) else {
                throw APIError(.notFound, "recording \(id) has no segment \(index)")
            }
            let segment = info.segments[index]
            parts = [part(segment)]
        } else {
            var frame = 0
            for segment in info.segments.sorted(by: { $0.startFrame < $1.startFrame }) {
                if segment.startFrame > frame { parts.append(.silence(frames: segment.startFrame - frame)) }
                parts.append(part(segment))
                frame = max(frame, segment.startFrame + segment.frames)
            }
            // Gaps after the last segment are silence the timeline counts too.
            if info.frames > frame { parts.append(.silence(frames: info.frames - frame)) }
        }
        let base = index.map { "\(id)-\($0)" } ?? id
        return RecordingExport(parts: parts, format: info.audioFormat, kind: kind, name: "\(base).\(kind.rawValue)")
    }
}
