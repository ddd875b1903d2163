import NIOCore
import Synchronization

/// The capture clients, grouped by event loop for the timer thread.
final class CaptureClients: Sendable {
    /// One client: its channel and the frame encoder's context, where ready-made frames enter.
    struct Member: Sendable {
        let channel: any Channel
        let encoder: NIOLoopBound<ChannelHandlerContext>

        init(channel: any Channel, encoder: ChannelHandlerContext) {
            self.channel = channel
            self.encoder = NIOLoopBound(encoder, eventLoop: channel.eventLoop)
        }
    }

    /// The members of each event loop that has any, kept grouped so a tick does no work of its own.
    private let loops = Mutex<[(loop: any EventLoop, members: [Member])]>([])

    /// Adds a client whose upgrade completed.
    func add(_ member: Member) {
        loops.withLock { loops in
            if let index = loops.firstIndex(where: { $0.loop === member.channel.eventLoop }) {
                loops[index].members.append(member)
            } else {
                loops.append((member.channel.eventLoop, [member]))
            }
        }
    }

    /// Removes a client whose channel closed.
    func remove(_ channel: any Channel) {
        loops.withLock { loops in
            for index in loops.indices { loops[index].members.removeAll { $0.channel === channel } }
            loops.removeAll { $0.members.isEmpty }
        }
    }

    /// The clients of each event loop that has any.
    func byLoop() -> [(loop: any EventLoop, members: [Member])] {
        loops.withLock { $0 }
    }
}
