extension CaptureGroup {
    /// Who a group's audio goes to, as the capture thread sees it.
    ///
    /// Never changed in place: a join or a leave builds the next one off the capture thread
    /// (`adding`, `removing`), and the hub swaps it in under its lock, so the capture thread never
    /// waits on an allocation and always iterates a complete list.
    struct Members {
        /// A lane and its members, per event loop.
        struct Lane {
            let lane: CaptureLane
            var loops: [CaptureLane.Loop]
        }

        /// Every subscriber of the group.
        private(set) var all: [CaptureSubscriber] = []
        /// Those that cut their own chunks (all but lane members); the capture thread appends to each.
        private(set) var copying: [CaptureSubscriber] = []
        /// Lane members by chunk length; the capture thread cuts each lane's chunks once.
        private(set) var lanes: [Lane] = []
        /// Those that asked for levels.
        private(set) var levels: [CaptureSubscriber] = []

        /// Whether no subscriber is left.
        var isEmpty: Bool { all.isEmpty }

        /// These members and `subscriber`: a lane member joins the lane of its chunk length (a new
        /// lane is made here when it is the first).
        func adding(_ subscriber: CaptureSubscriber) -> Members {
            var next = self
            next.all.append(subscriber)
            if subscriber.parameters.levels { next.levels.append(subscriber) }
            guard subscriber.sharesChunks, let writer = subscriber.writer else {
                next.copying.append(subscriber)
                return next
            }
            let milliseconds = subscriber.parameters.chunkMilliseconds
            guard let index = next.lanes.firstIndex(where: { $0.lane.chunkMilliseconds == milliseconds }) else {
                let lane = CaptureLane(chunkMilliseconds: milliseconds, chunkBytes: subscriber.chunkBytes)
                next.lanes.append(Lane(lane: lane, loops: [CaptureLane.Loop(drain: writer.drain, members: [subscriber])]))
                return next
            }
            if let loop = next.lanes[index].loops.firstIndex(where: { $0.drain === writer.drain }) {
                next.lanes[index].loops[loop].members.append(subscriber)
            } else {
                next.lanes[index].loops.append(CaptureLane.Loop(drain: writer.drain, members: [subscriber]))
            }
            return next
        }

        /// These members without `subscriber` (the same if it is not one); a lane left empty goes.
        func removing(_ subscriber: CaptureSubscriber) -> Members {
            var next = self
            next.all.removeAll { $0 === subscriber }
            next.levels.removeAll { $0 === subscriber }
            next.copying.removeAll { $0 === subscriber }
            for index in next.lanes.indices {
                for loop in next.lanes[index].loops.indices {
                    next.lanes[index].loops[loop].members.removeAll { $0 === subscriber }
                }
                next.lanes[index].loops.removeAll { $0.members.isEmpty }
            }
            next.lanes.removeAll { $0.loops.isEmpty }
            return next
        }
    }
}
