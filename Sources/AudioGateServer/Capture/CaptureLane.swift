import AudioGateCore
import NIOCore

/// The binary WebSocket clients of one group that take the same chunk length, sharing every chunk.
///
/// The capture thread cuts the group's audio into chunks once per lane, frames each chunk as a
/// WebSocket binary message once, and hands it to each event loop that has members (a copy per
/// loop): its work per period grows with lanes and event loops, not with clients. Each event loop
/// then writes that one buffer to each member's socket, queueing a reference to it for members
/// that are behind.
///
/// The lane itself is the cutting state, touched only by the capture thread inside the hub's lock;
/// who its chunks go to is part of its group's `CaptureGroup.Members`, rebuilt off that thread for
/// every join and leave and swapped in whole.
///
/// Unchecked Sendable: a client makes a lane (untouched) when it builds the members it joins, and
/// the members reach the capture thread through the hub's core lock; from then on only the capture
/// thread, under that lock, touches the cutting state.
final class CaptureLane: @unchecked Sendable {
    /// What a lane hands an event loop for its members, in capture order.
    enum Item: Sendable {
        /// A complete chunk, framed: the binary frame header sits before the payload.
        case chunk(SharedChunk)
        /// The capture device was lost or came back, after the chunks posted before it.
        case device(DeviceMessage.State)
    }

    /// The members of one event loop, handed over together.
    struct Loop: Sendable {
        let drain: CaptureDrain
        var members: [CaptureSubscriber]
    }

    let chunkMilliseconds: Int
    let chunkBytes: Int
    private var open: ByteBuffer?
    private var openStart: UInt64 = 0
    private let allocator = ByteBufferAllocator()

    init(chunkMilliseconds: Int, chunkBytes: Int) {
        self.chunkMilliseconds = chunkMilliseconds
        self.chunkBytes = chunkBytes
    }

    /// Drops the chunk being cut (the timeline broke: device restored, or stopped while unused).
    func reset() {
        open = nil
    }

    /// Cuts `bytes` (the group's audio, its first frame captured at `start`) into chunks and posts
    /// each complete one to every event loop in `loops`.
    func feed(
        _ bytes: UnsafeBufferPointer<UInt8>, start: Double, nanosecondsPerFrame: Double, bytesPerFrame: Int,
        ready: UInt64, to loops: [Loop], drains: UnsafeMutablePointer<CaptureDrains>?
    ) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            var chunk: ByteBuffer
            if let current = open {
                chunk = current
                open = nil
            } else {
                chunk = allocator.buffer(capacity: chunkBytes + CaptureChannelWriter.headerRoom)
                chunk.moveWriterIndex(forwardBy: CaptureChannelWriter.headerRoom)
                chunk.moveReaderIndex(forwardBy: CaptureChannelWriter.headerRoom)
                openStart = UInt64(max(0, start + Double(offset / bytesPerFrame) * nanosecondsPerFrame))
            }
            let take = min(chunkBytes - chunk.readableBytes, bytes.count - offset)
            chunk.writeBytes(UnsafeRawBufferPointer(start: base + offset, count: take))
            offset += take
            guard chunk.readableBytes == chunkBytes else {
                open = chunk
                continue
            }
            CaptureChannelWriter.prependBinaryFrameHeader(&chunk)
            post(.chunk(SharedChunk(frame: chunk, start: openStart, ready: ready)), to: loops, drains: drains)
        }
    }

    /// Hands `item` to every event loop in `loops`, after what was posted before it.
    func post(_ item: Item, to loops: [Loop], drains: UnsafeMutablePointer<CaptureDrains>?) {
        for (index, loop) in loops.enumerated() {
            var item = item
            if index > 0, case .chunk(var chunk) = item {
                // Each event loop sends its own copy: every member's write retains and releases the
                // buffer, and two loops doing that to one reference count make its cache line bounce.
                var copy = allocator.buffer(capacity: chunk.frame.readableBytes)
                copy.writeImmutableBuffer(chunk.frame)
                chunk.frame = copy
                item = .chunk(chunk)
            }
            if let drains {
                drains.pointee.post(item, to: loop.members, on: loop.drain)
            } else {
                loop.drain.post(item, to: loop.members)
                loop.drain.schedule()
            }
        }
    }
}
