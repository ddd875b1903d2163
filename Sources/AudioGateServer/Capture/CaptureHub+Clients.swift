import AudioGateCore
import AudioGateDevices
import NIOCore

extension CaptureHub {
    /// Throws 429 when the server already has its most capture clients.
    public func checkCapacity() throws(CaptureError) {
        try checkRoom(members: members.withLock { $0.count })
    }

    /// The one capacity rule: capture clients and encoded-stream listeners together stay below
    /// `--max-capture-clients`.
    private func checkRoom(members count: Int) throws(CaptureError) {
        guard count + encoders.listenerCount < limits.maxCaptureClients else {
            throw CaptureError(.tooManyClients, "the server already has \(limits.maxCaptureClients) capture clients")
        }
    }

    /// Adds a client with its own queue; its group (and resampler) is created if it is the first.
    ///
    /// Recordings pass their own queue length and are neither counted against the client limit nor
    /// listed among the clients.
    /// With `channel` (a WebSocket) the subscriber writes to it from its event loop, batched per
    /// device period (see `CaptureChannelWriter`); its writer must then be started on that loop.
    public func subscribe(
        _ parameters: CaptureParameters, transport: CaptureSubscriber.Transport, queueMilliseconds: Int? = nil,
        channel: (any Channel)? = nil
    ) throws(CaptureError) -> CaptureSubscriber {
        let writer = channel.map {
            CaptureChannelWriter(
                channel: $0, drain: drain(for: $0.eventLoop), json: parameters.encoding == .json, metrics: metrics)
        }
        let subscriber = CaptureSubscriber(
            id: nextID.add(1, ordering: .relaxed).oldValue, parameters: parameters, transport: transport,
            queueMilliseconds: queueMilliseconds ?? limits.captureQueueMilliseconds, writer: writer)
        if transport != .recording, transport != .encoder {
            try members.withLock { members throws(CaptureError) in
                try checkRoom(members: members.count)
                members.append(subscriber)
            }
        }
        do throws(CaptureError) {
            try join(subscriber)
        } catch {
            members.withLock { $0.removeAll { $0 === subscriber } }
            throw error
        }
        publishCounts()
        catchUpMusic(subscriber)
        return subscriber
    }

    /// Puts `subscriber` into its group, building the group first if there is none.
    ///
    /// A group, its resampler tables and its processing channel are built here, outside every
    /// lock; under the registry lock the subscriber joins the group that is there by then (a
    /// group another client built meanwhile wins, and this one is discarded unused), and the next
    /// list and members are built there too. The capture thread's lock is taken only to swap them in.
    private func join(_ subscriber: CaptureSubscriber) throws(CaptureError) {
        let parameters = subscriber.parameters
        var candidate: CaptureGroup?
        var outcome: JoinOutcome
        while true {
            outcome = registry.withLock { registry in
                if let existing = registry.group(for: parameters) {
                    return .joined(install(subscriber, in: existing, registry: &registry, adding: false))
                }
                guard let candidate else { return .needsGroup }
                return .installed(install(subscriber, in: candidate, registry: &registry, adding: true))
            }
            guard case .needsGroup = outcome else { break }
            // Outside every lock: a processing channel and resampler tables take a while to build.
            candidate = try makeGroup(for: parameters)
        }
        switch outcome {
        case .installed(let retired):
            // The channel's thread starts only now, so a group that is discarded never had one.
            candidate?.start()
            _ = retired
        case .joined(let retired):
            _ = candidate?.close()
            _ = retired
        case .needsGroup:
            break
        }
        demand.wake()
    }

    /// What a join did under the registry lock, with what it replaced (released after the lock).
    private enum JoinOutcome {
        /// No group for the format yet: build one outside the lock and try again.
        case needsGroup
        /// Joined the group that was already there.
        case joined(Retired)
        /// Put the new group into the list and joined it.
        case installed(Retired)
    }

    /// The list and members a change replaced: released after the locks, never under `core`.
    private struct Retired {
        var groups: [CaptureGroup]?
        var members: CaptureGroup.Members
    }

    /// Builds the next members of `group` (and with `adding`, the next list) and swaps them in
    /// under the capture thread's lock; called with the registry lock held.
    private func install(
        _ subscriber: CaptureSubscriber, in group: CaptureGroup, registry: inout Registry, adding: Bool
    ) -> Retired {
        var members = group.members.adding(subscriber)
        var groups: [CaptureGroup]?
        if adding {
            groups = registry.groups + [group]
            registry.groups = groups!
        }
        core.withLock { core in
            if groups != nil { swap(&core.groups, &groups!) }
            group.swapMembers(&members)
            listening.store(true, ordering: .relaxed)
            publishShortestChunk(core.groups)
            if core.deviceLost { subscriber.deliver(.lost) }
        }
        return Retired(groups: groups, members: members)
    }

    /// A group for a client's format and processing, its resampler built for the current hardware
    /// format (so the capture thread does not build it).
    private func makeGroup(for parameters: CaptureParameters) throws(CaptureError) -> CaptureGroup {
        let group: CaptureGroup
        do {
            group = try CaptureGroup(
                format: parameters.format, quality: quality, processing: parameters.processing, echo: echoReference)
        } catch {
            throw CaptureError(.badParameter, "capture processing is unavailable: \(error)")
        }
        if let hardware = core.withLock({ $0.hardware }) { group.prepare(for: hardware) }
        return group
    }

    func drain(for eventLoop: any EventLoop) -> CaptureDrain {
        loopDrains.withLock { drains in
            let key = ObjectIdentifier(eventLoop)
            if let drain = drains[key] { return drain }
            let drain = CaptureDrain(eventLoop: eventLoop, metrics: metrics)
            drains[key] = drain
            return drain
        }
    }

    /// Removes a client; the last one of a format frees the group and its resampler, and stops its
    /// processing thread (`leave` also waits for that thread to end).
    public func unsubscribe(_ subscriber: CaptureSubscriber) {
        _ = detach(subscriber)
    }

    /// Removes a client like `unsubscribe`, then returns once the processing thread of the group it
    /// left empty, if any, has ended.
    public func leave(_ subscriber: CaptureSubscriber) async {
        await detach(subscriber)?.join()
    }

    /// Removes a client; returns the processing thread of the group it emptied, to join.
    private func detach(_ subscriber: CaptureSubscriber) -> WorkerThread? {
        subscriber.close()
        let (emptied, retired) = registry.withLock { registry -> (CaptureGroup?, Retired?) in
            guard let group = registry.group(for: subscriber.parameters) else { return (nil, nil) }
            var members = group.members.removing(subscriber)
            var groups: [CaptureGroup]?
            if members.isEmpty {
                groups = registry.groups.filter { $0 !== group }
                registry.groups = groups!
            }
            core.withLock { core in
                if groups != nil { swap(&core.groups, &groups!) }
                group.swapMembers(&members)
                listening.store(!core.groups.isEmpty, ordering: .relaxed)
                publishShortestChunk(core.groups)
            }
            return (group.members.isEmpty ? group : nil, Retired(groups: groups, members: members))
        }
        // The old list and members, and an emptied group with its resampler, are freed here,
        // outside the locks, when their last references go.
        _ = retired
        let thread = emptied?.close()
        members.withLock { $0.removeAll { $0 === subscriber } }
        publishCounts()
        return thread
    }

    /// Called with the core lock held, whenever a subscriber joins or leaves.
    private func publishShortestChunk(_ groups: [CaptureGroup]) {
        var shortest = Int.max
        for group in groups {
            for subscriber in group.subscribers { shortest = min(shortest, subscriber.parameters.chunkMilliseconds) }
        }
        shortestChunk.store(shortest, ordering: .relaxed)
    }

    private func publishCounts() {
        let counts = members.withLock { members in
            members.reduce(into: [AudioFormat: Int]()) { $0[$1.parameters.format, default: 0] += 1 }
        }
        metrics.setSubscribers(counts)
    }
}
