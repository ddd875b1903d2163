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
/// Lives inside the hub's lock, like its group: the capture thread feeds it, clients join and leave.
final class CaptureLane {
    /// What a lane hands an event loop for its members, in capture order.
    enum Item: Sendable {
        /// A complete chunk, framed: the binary frame header sits before the payload.
        case chunk(SharedChunk)
        /// The capture device was lost or came back, after the chunks posted before it.
        case device(DeviceMessage.State)
    }

    /// The members of one event loop, handed over together.
    private struct Loop {
        let drain: CaptureDrain
        var members: [CaptureSubscriber]
    }

    let chunkMilliseconds: Int
    private let chunkBytes: Int
    private var loops: [Loop] = []
    private var open: ByteBuffer?
    private var openStart: UInt64 = 0
    private let allocator = ByteBufferAllocator()

    init(chunkMilliseconds: Int, chunkBytes: Int) {
        self.chunkMilliseconds = chunkMilliseconds
        self.chunkBytes = chunkBytes
        loops.reserveCapacity(4)
    }

    /// Whether no client is left.
    var isEmpty: Bool { loops.isEmpty }

    /// Adds a client; its first chunk is the one being cut now.
    func add(_ subscriber: CaptureSubscriber, drain: CaptureDrain) {
        if let index = loops.firstIndex(where: { $0.drain === drain }) {
            loops[index].members.append(subscriber)
        } else {
            loops.append(Loop(drain: drain, members: [subscriber]))
        }
    }

    /// Removes a client (no-op if it is not a member).
    func remove(_ subscriber: CaptureSubscriber) {
        for index in loops.indices {
            loops[index].members.removeAll { $0 === subscriber }
        }
        loops.removeAll { $0.members.isEmpty }
    }

    /// Drops the chunk being cut (the timeline broke: device restored, or stopped while unused).
    func reset() {
        open = nil
    }

    /// Cuts `bytes` (the group's audio, its first frame captured at `start`) into chunks and posts
    /// each complete one to every event loop with members.
    func feed(
        _ bytes: UnsafeBufferPointer<UInt8>, start: Double, nanosecondsPerFrame: Double, bytesPerFrame: Int,
        ready: UInt64, drains: UnsafeMutablePointer<CaptureDrains>?
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
            post(.chunk(SharedChunk(frame: chunk, start: openStart, ready: ready)), drains: drains)
        }
    }

    /// Hands `item` to every event loop with members, after what was posted before it.
    func post(_ item: Item, drains: UnsafeMutablePointer<CaptureDrains>?) {
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

/// One chunk every member of a lane sends: a framed binary WebSocket message and its capture times.
struct SharedChunk: Sendable {
    /// The binary frame header followed by the chunk's bytes (never written to once shared).
    var frame: ByteBuffer
    /// Monotonic ns capture time of the chunk's first frame.
    var start: UInt64
    /// When the period completing the chunk was read from the device.
    var ready: UInt64
}
