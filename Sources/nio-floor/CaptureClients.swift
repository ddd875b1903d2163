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

    private let members = Mutex<[Member]>([])

    /// Adds a client whose upgrade completed.
    func add(_ member: Member) {
        members.withLock { $0.append(member) }
    }

    /// Removes a client whose channel closed.
    func remove(_ channel: any Channel) {
        members.withLock { $0.removeAll { $0.channel === channel } }
    }

    /// The clients of each event loop that has any.
    func byLoop() -> [(any EventLoop, [Member])] {
        let all = members.withLock { $0 }
        var loops: [(any EventLoop, [Member])] = []
        for member in all {
            if let index = loops.firstIndex(where: { $0.0 === member.channel.eventLoop }) {
                loops[index].1.append(member)
            } else {
                loops.append((member.channel.eventLoop, [member]))
            }
        }
        return loops
    }
}
