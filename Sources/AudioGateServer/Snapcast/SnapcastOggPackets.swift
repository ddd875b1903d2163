/// Splits Ogg pages into packets (RFC 3533 lacing), carrying a packet that spans pages over to the
/// next call. snapserver's `ogg` codec sends whole pages: its header pages once, then a few pages per chunk.
struct SnapcastOggPackets {
    /// Largest packet assembled; a Vorbis packet of 48 kHz stereo audio is a few kilobytes.
    static let maximumPacketBytes = 1 << 20

    private var partial: [UInt8] = []

    /// Calls `body` with each packet completed by the pages in `bytes`; throws on bytes that are not pages.
    mutating func packets(in bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(SnapcastError) -> Void)
        throws(SnapcastError)
    {
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 27, bytes[offset] == 0x4F, bytes[offset + 1] == 0x67, bytes[offset + 2] == 0x67,
                bytes[offset + 3] == 0x53
            else { throw SnapcastError(.badChunk, "the Ogg data does not start with a page (OggS)") }
            let segments = Int(bytes[offset + 26])
            let table = offset + 27
            guard bytes.count >= table + segments else { throw SnapcastError(.badChunk, "an Ogg page is cut short") }
            var data = table + segments
            for index in 0..<segments {
                let lacing = Int(bytes[table + index])
                guard bytes.count >= data + lacing else { throw SnapcastError(.badChunk, "an Ogg page is cut short") }
                guard partial.count + lacing <= Self.maximumPacketBytes else {
                    throw SnapcastError(.badChunk, "an Ogg packet over \(Self.maximumPacketBytes) bytes")
                }
                partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[data..<(data + lacing)]))
                data += lacing
                if lacing < 255 {
                    try withSnapcastBytes(partial, body)
                    partial.removeAll(keepingCapacity: true)
                }
            }
            offset = data
        }
    }

    /// Drops a packet left unfinished.
    mutating func reset() { partial.removeAll(keepingCapacity: true) }
}

/// `withUnsafeBytes` for typed throws: the standard one only rethrows untyped errors.
func withSnapcastBytes<T>(_ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws(SnapcastError) -> T) throws(SnapcastError) -> T {
    let result = bytes.withUnsafeBytes { raw in Result<T, SnapcastError> { () throws(SnapcastError) -> T in try body(raw) } }
    return try result.get()
}
