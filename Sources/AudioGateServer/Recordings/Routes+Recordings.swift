import Foundation
import HTTPTypes
import Hummingbird
import NIOCore


#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension AudioGateServer {
    /// `/v1/recordings`: start, list, inspect, stop, delete, and download segments.
    func addRecordingRoutes(to router: Router<AudioGateRequestContext>) {
        let service = recordings
        router.on(RouteTable.startRecording) { request, _ in
            let body = try await request.body.collect(upTo: 4096)
            let recording = try await service.start(RecordingRequest(json: Data(buffer: body)))
            var response = try JSONResponse.make(RecordingResource(recording, detailed: true), status: .created)
            response.headers[.location] = "/v1/recordings/\(recording.id)"
            return response
        }
        router.on(RouteTable.recordings) { _, _ in
            let disk = service.disk
            return try JSONResponse.make(
                RecordingList(
                    recordings: service.all.map { RecordingResource($0, detailed: false) },
                    disk: .init(usedBytes: disk.usedBytes, limitBytes: disk.limitBytes, dataDir: disk.directory)))
        }
        router.on(RouteTable.recording) { _, context in
            try JSONResponse.make(RecordingResource(try service.info(context.parameters.require("id")), detailed: true))
        }
        router.on(RouteTable.stopRecording) { _, context in
            let info = try await service.stop(context.parameters.require("id"))
            return try JSONResponse.make(RecordingResource(info, detailed: true))
        }
        router.on(RouteTable.deleteRecording) { _, context in
            try await service.delete(context.parameters.require("id"))
            return Response(status: .noContent)
        }
        router.on(RouteTable.segment) { request, context in
            let file = try context.parameters.require("segment")
            let stem = String(file.prefix { $0 != "." })
            guard let index = Int(stem), index >= 0, stem.count <= 8, file.count > stem.count + 1 else {
                throw RecordingError(.notFound, "segments are named <n>.wav (or .flac, .ogg, .mp3, .m4a), counting from 0")
            }
            let id = try context.parameters.require("id")
            // The file as stored when the extension is its own; otherwise a conversion.
            guard let download = try await service.storedSegment(id, index: index, fileExtension: String(file.dropFirst(stem.count + 1))) else {
                guard let kind = try RecordingExport.Kind.parse(file, base: stem) else {
                    throw RecordingError(.notFound, "segments are named <n>.wav (or .flac, .ogg, .mp3, .m4a), counting from 0")
                }
                return try await service.export(id, segment: index, kind: kind).response()
            }
            return try SegmentResponse.make(download, range: request.headers[.range])
        }
        router.on(RouteTable.recordingAudio) { _, context in
            let file = try context.parameters.require("file")
            guard let kind = try RecordingExport.Kind.parse(file, base: "audio") else {
                throw RecordingError(.notFound, "the whole recording is audio.wav, .flac, .ogg, .mp3 or .m4a")
            }
            return try await service.export(context.parameters.require("id"), segment: nil, kind: kind).response()
        }
    }
}
