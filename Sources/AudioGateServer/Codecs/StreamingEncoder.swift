import CFFmpeg
import NIOCore

/// Encodes interleaved float PCM to one `AudioEncoding`, cutting the output into pieces that each
/// end at a page, frame or cluster boundary (or are one bare codec packet), so a live stream sends
/// every piece as soon as it is out and a late joiner can start at any piece after `header`.
/// Blocking CPU work: run it off the event loops.
final class StreamingEncoder {
    let encoding: AudioEncoding
    /// The container's stream headers (Ogg's header pages, WebM's EBML header and tracks, FLAC's
    /// STREAMINFO); empty for MP3 and bare packets. A late joiner gets these first.
    private(set) var header: ByteBuffer
    /// Samples at 48 kHz an Opus decoder drops from the start (RFC 7845 pre-skip); 0 for other codecs.
    let preSkip: Int
    /// Samples per encoder frame.
    var frameSize: Int { encoder.frameSize }
    /// Samples of codec delay at the start of the decoded audio. Containers with gapless
    /// information (Ogg, WebM, MP4, an MP3 file's LAME tag) tell decoders to drop it; an MP3
    /// stream cannot, so its decoded length is this much longer.
    var codecDelay: Int { encoder.initialPadding }

    private let encoder: EncoderHandle
    private let muxer: MuxerHandle?
    private let output = EncodedOutput()
    private let frame: FrameHandle
    private let packet: PacketHandle
    private var pending: [Float] = []
    private var pendingFrames = 0
    private var nextPTS: Int64 = 0
    private var framesSinceFlush = 0
    private let flushFrames: Int
    private var finished = false

    /// An encoder whose pieces come back from `encode` and `finish`. `flushMilliseconds` is the
    /// longest audio an Ogg page or WebM cluster holds (FLAC and MP3 frames go out one by one).
    convenience init(_ encoding: AudioEncoding, flushMilliseconds: Int = 100) throws(CodecError) {
        try self.init(encoding, path: nil, flushMilliseconds: flushMilliseconds)
    }

    /// An encoder writing the file at `path` (the only way to `m4a`, whose index goes to the front
    /// when `finish` runs); `encode` and `finish` hand back no pieces.
    convenience init(_ encoding: AudioEncoding, path: String) throws(CodecError) {
        try self.init(encoding, path: path, flushMilliseconds: 1000)
    }

    private init(_ encoding: AudioEncoding, path: String?, flushMilliseconds: Int) throws(CodecError) {
        do {
            try encoding.validate()
        } catch {
            throw CodecError(.unsupported, "\(error.parameter): \(error.message)")
        }
        if encoding.container == .m4a, path == nil {
            throw CodecError(.unsupported, "m4a is written to a file: its index goes in front of the audio at the end")
        }
        self.encoding = encoding
        let muxerName = encoding.container.muxer
        let globalHeader = try muxerName.map { name throws(CodecError) in try MuxerHandle.wantsGlobalHeader(name) } ?? false
        encoder = try EncoderHandle(encoding, globalHeader: globalHeader)
        frame = try FrameHandle()
        packet = try PacketHandle()
        preSkip = encoding.codec == .opus ? encoder.initialPadding * 48000 / encoding.rate : 0
        let usesPages = encoding.container == .ogg || encoding.container == .webm
        flushFrames = usesPages ? max(1, encoding.rate * flushMilliseconds / 1000) : 1
        if let muxerName {
            var options: [String: String] = [:]
            switch encoding.container {
            // A file gets the LAME tag (rewritten at the end with the delay and padding, for gapless
            // decoding); a stream cannot seek back to it.
            case .mp3: options = path == nil ? ["id3v2_version": "0", "write_xing": "0"] : ["id3v2_version": "0"]
            case .m4a: options = ["movflags": "+faststart"]
            case .webm: options = ["live": "1"]
            case .ogg: options = ["page_duration": "\(flushMilliseconds * 1000)"]
            case .flac, .packets: break
            }
            if let path {
                muxer = try MuxerHandle(format: muxerName, encoder: encoder, path: path, options: options)
            } else {
                muxer = try MuxerHandle(format: muxerName, encoder: encoder, output: output, options: options)
            }
        } else {
            muxer = nil
        }
        header = output.take()
    }

    /// Encodes interleaved samples (`encoding.channels` per frame); appends the completed pieces.
    func encode(_ samples: UnsafeBufferPointer<Float>, into pieces: inout [EncodedPiece]) throws(CodecError) {
        guard !finished else { throw CodecError(.library, "the encoder has finished") }
        let channels = encoding.channels
        let frameSize = encoder.frameSize
        var offset = 0
        let total = samples.count / channels
        while offset < total {
            if pendingFrames == 0, total - offset >= frameSize {
                // A whole frame straight from the input, without going through `pending`.
                try encodeFrame(UnsafeBufferPointer(rebasing: samples[(offset * channels)..<((offset + frameSize) * channels)]), frames: frameSize, into: &pieces)
                offset += frameSize
                continue
            }
            let take = min(frameSize - pendingFrames, total - offset)
            if pending.count < frameSize * channels { pending = [Float](repeating: 0, count: frameSize * channels) }
            for index in 0..<(take * channels) { pending[pendingFrames * channels + index] = samples[offset * channels + index] }
            pendingFrames += take
            offset += take
            if pendingFrames == frameSize {
                pendingFrames = 0
                try pending.withUnsafeBufferPointer { buffer throws(CodecError) in
                    try encodeFrame(buffer, frames: frameSize, into: &pieces)
                }
            }
        }
    }

    /// Encodes what is left, drains the encoder, writes the trailer; appends the last pieces.
    func finish(into pieces: inout [EncodedPiece]) throws(CodecError) {
        guard !finished else { return }
        if pendingFrames > 0 {
            let channels = encoding.channels
            var frames = pendingFrames
            if !encoder.takesSmallLastFrame {
                for index in (pendingFrames * channels)..<(encoder.frameSize * channels) { pending[index] = 0 }
                frames = encoder.frameSize
            }
            pendingFrames = 0
            try pending.withUnsafeBufferPointer { buffer throws(CodecError) in
                try encodeFrame(buffer, frames: frames, into: &pieces)
            }
        }
        finished = true
        try encoder.send(nil)
        try drainPackets(into: &pieces)
        if let muxer {
            try muxer.finish()
            let last = output.take()
            if last.readableBytes > 0 { pieces.append(EncodedPiece(bytes: last, frames: framesSinceFlush)) }
            framesSinceFlush = 0
        }
    }

    private func encodeFrame(_ samples: UnsafeBufferPointer<Float>, frames: Int, into pieces: inout [EncodedPiece]) throws(CodecError) {
        let target = frame.frame
        av_frame_unref(target)
        target.pointee.nb_samples = Int32(frames)
        target.pointee.format = encoder.sampleFormat.rawValue
        target.pointee.sample_rate = Int32(encoding.rate)
        try avCheck(av_channel_layout_copy(&target.pointee.ch_layout, &encoder.context.pointee.ch_layout), "av_channel_layout_copy")
        try avCheck(av_frame_get_buffer(target, 0), "av_frame_get_buffer")
        guard let data = target.pointee.extended_data,
            SampleDeinterleaver.deinterleave(samples, frames: frames, channels: encoding.channels, into: data, format: encoder.sampleFormat)
        else { throw CodecError(.library, "the encoder's sample layout could not be written") }
        target.pointee.pts = nextPTS
        nextPTS += Int64(frames)
        try encoder.send(frame)
        try drainPackets(into: &pieces)
    }

    private func drainPackets(into pieces: inout [EncodedPiece]) throws(CodecError) {
        while try encoder.receive(into: packet) {
            defer { packet.unref() }
            guard let muxer else {
                if let data = packet.packet.pointee.data, packet.packet.pointee.size > 0 {
                    var piece = ByteBufferAllocator().buffer(capacity: Int(packet.packet.pointee.size))
                    piece.writeBytes(UnsafeRawBufferPointer(start: data, count: Int(packet.packet.pointee.size)))
                    pieces.append(EncodedPiece(bytes: piece, frames: max(0, Int(packet.packet.pointee.duration))))
                }
                continue
            }
            let duration = Int(packet.packet.pointee.duration)
            try muxer.write(packet, from: encoder.context.pointee.time_base)
            framesSinceFlush += max(duration, 1)
            if framesSinceFlush >= flushFrames {
                try muxer.flush()
                let piece = output.take()
                if piece.readableBytes > 0 {
                    pieces.append(EncodedPiece(bytes: piece, frames: framesSinceFlush))
                    framesSinceFlush = 0
                }
            }
        }
    }
}
