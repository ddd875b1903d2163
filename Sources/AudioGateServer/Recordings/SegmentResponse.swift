import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix

/// Sends a segment (or one range of it) read from disk in blocks on the thread pool.
enum SegmentResponse {
    static let blockBytes = 64 << 10

    static func make(_ download: SegmentDownload, range header: String?) throws -> Response {
        let length = download.length
        var headers: HTTPFields = [
            .contentType: download.codec.contentType, .acceptRanges: "bytes",
            .contentDisposition: "attachment; filename=\"\(download.name)\"",
        ]
        let range: ClosedRange<Int>
        let status: HTTPResponse.Status
        switch ByteRange(header: header, length: length) {
        case .whole:
            range = 0...(length - 1)
            status = .ok
        case .partial(let requested):
            range = requested
            status = .partialContent
            headers[.contentRange] = "bytes \(requested.lowerBound)-\(requested.upperBound)/\(length)"
        case .unsatisfiable:
            headers[.contentRange] = "bytes */\(length)"
            headers[.contentType] = "application/json"
            let error = RecordingError(.badParameter, "the range is beyond the segment's \(length) bytes")
            return Response(
                status: .rangeNotSatisfiable, headers: headers, body: .init(byteBuffer: ByteBuffer(string: error.responseJSON)))
        }
        let header = download.header
        let path = download.path
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: range.count) { writer in
                var offset = range.lowerBound
                // The header is made for the frames counted, not read from the file.
                if offset < header.count {
                    let end = min(header.count - 1, range.upperBound)
                    try await writer.write(ByteBuffer(bytes: header[offset...end]))
                    offset = end + 1
                }
                guard offset <= range.upperBound else {
                    try await writer.finish(nil)
                    return
                }
                let file = try await NIOThreadPool.singleton.runIfActive { () throws -> FileDescriptorBox in
                    try FileDescriptorBox(path: path)
                }
                while offset <= range.upperBound {
                    let count = min(blockBytes, range.upperBound - offset + 1)
                    let start = offset
                    let block = try await NIOThreadPool.singleton.runIfActive { try file.read(count, at: start) }
                    guard !block.isEmpty else { throw RecordingError(.io, "the segment file is shorter than listed") }
                    try await writer.write(ByteBuffer(bytes: block))
                    offset += block.count
                }
                try await writer.finish(nil)
            })
    }
}
