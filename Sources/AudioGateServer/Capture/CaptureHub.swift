import AudioGateCore
import AudioGateDevices
import Logging
import NIOCore
import Synchronization

/// Receives every captured period on the capture thread and fans it out to subscribers.
///
/// One group per distinct client format shares one resampler; each subscriber has its own
/// bounded queue, so a slow client only ever loses its own oldest audio.
public final class CaptureHub: CaptureSink {
    /// What the capture thread works on; clients only take this lock to join or leave a group.
    private struct Core {
        var groups: [CaptureGroup] = []
        let scratch = CaptureScratch()
        var hardware: AudioFormat?
        var level = LevelMeter()
        var levelFrames = 0
        var deviceLost = false
        var lastXruns: Int?
        /// Set when frames were lost (xrun, outage); the next period's timestamp measures the gap.
        var discontinuity = false
        var expectedNext: UInt64?
        /// The event loops this period's chunks go to, each woken once when the period is done.
        var drains = CaptureDrains()
    }

    /// What readers (status, metrics) see without touching the capture thread's lock.
    private struct Published {
        var lastLevel = (rms: LevelMeter.floorDBFS, peak: LevelMeter.floorDBFS)
        var lostNanoseconds: UInt64 = 0
        var deviceLost = false
    }

    /// Capture timestamps that jump by less than this are clock jitter, not lost audio.
    static let jitterNanoseconds: UInt64 = 25_000_000

    private let core: Mutex<Core>
    private let published = Mutex(Published())
    /// Every subscriber, for status; never touched by the capture thread.
    private let members = Mutex<[CaptureSubscriber]>([])
    private let nextID = Atomic<Int>(1)
    /// One batch per NIO event loop that has WebSocket capture clients (event loops are few and fixed).
    private let loopDrains = Mutex<[ObjectIdentifier: CaptureDrain]>([:])
    private let limits: ServerConfiguration.Limits
    private let quality: Resampler.Quality
    let metrics: CaptureMetrics
    private let logger: Logger
    /// What the speaker plays, for echo cancellation.
    let echoReference: EchoReference
    /// Stops the capture device while nobody listens; subscribing wakes it.
    public let demand: DeviceDemand
    /// Whether any group exists, read by the capture thread every period without the lock.
    private let listening = Atomic<Bool>(false)
    /// The shortest chunk any subscriber takes, in ms: how much audio the capture thread may read at once.
    private let shortestChunk = Atomic<Int>(Int.max)

    public init(
        configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger,
        echoReference: EchoReference = EchoReference()
    ) {
        self.echoReference = echoReference
        demand = DeviceDemand(idleMilliseconds: configuration.deviceIdleMilliseconds)
        limits = configuration.limits
        quality = configuration.resamplerQuality
        self.metrics = CaptureMetrics(registry: metrics.registry)
        self.logger = logger
        var core = Core()
        core.groups.reserveCapacity(16)
        self.core = Mutex(core)
    }

    // MARK: - CaptureSink (capture thread)

    public func captured(_ samples: UnsafeBufferPointer<Float>, frames: Int, format: AudioFormat, timestamp: UInt64) {
        let ready = MonotonicClock.nowNanoseconds()
        let lent = LentBuffer(samples)
        let (level, lost) = core.withLock { core -> ((rms: Double, peak: Double)?, UInt64) in
            let samples = lent.readOnly
            var lost: UInt64 = 0
            // Every jump of the timeline is lost time, so `lost_ms` and the gaps clients and
            // recordings see agree: after an xrun or outage any jump, else one beyond jitter (the
            // capture clock re-anchoring after a sound server delivered late).
            if let expected = core.expectedNext, timestamp > expected,
                core.discontinuity || timestamp - expected > Self.jitterNanoseconds
            {
                lost = timestamp - expected
            }
            core.discontinuity = false
            core.expectedNext = timestamp &+ UInt64(frames) * 1_000_000_000 / UInt64(max(format.rate, 1))
            core.hardware = format

            var level: (rms: Double, peak: Double)?
            core.level.add(samples)
            core.levelFrames += frames
            if core.levelFrames >= format.rate / 20 {
                level = (core.level.rmsDBFS, core.level.peakDBFS)
                core.level.reset()
                core.levelFrames = 0
            }
            let groups = core.groups
            let scratch = core.scratch
            withUnsafeMutablePointer(to: &core.drains) { drains in
                for group in groups {
                    group.process(
                        samples, frames: frames, hardware: format, timestamp: timestamp, ready: ready,
                        scratch: scratch, drains: drains)
                    if let level {
                        for subscriber in group.levelSubscribers {
                            subscriber.deliverLevel(rms: level.rms, peak: level.peak, drains: drains)
                        }
                    }
                }
                drains.pointee.schedule()
            }
            return (level, lost)
        }
        if level != nil || lost > 0 {
            let total = published.withLock { published in
                if let level { published.lastLevel = level }
                published.lostNanoseconds &+= lost
                return published.lostNanoseconds
            }
            // Only after a loss (rare); a gauge set is a single atomic store.
            if lost > 0 { metrics.setLost(milliseconds: Double(total) / 1e6) }
        }
    }

    public var needsDevice: Bool { listening.load(ordering: .relaxed) }

    /// No subscriber gets a chunk before it is whole, so reading less than the shortest chunk at a
    /// time only adds wake-ups.
    public var batchMilliseconds: Int { shortestChunk.load(ordering: .relaxed) }

    public func captureStatusChanged(_ status: DeviceStatus) {
        if status.state == .idle {
            core.withLock { core in
                // Stopped for want of listeners: nobody missed that audio, so the gap is not lost time.
                core.expectedNext = nil
                core.discontinuity = false
                core.level.reset()
                core.levelFrames = 0
                for group in core.groups { group.reset() }
            }
            published.withLock { $0.lastLevel = (LevelMeter.floorDBFS, LevelMeter.floorDBFS) }
            return
        }
        let event = core.withLock { core -> DeviceMessage.State? in
            if status.state == .running {
                if let last = core.lastXruns, status.xruns > last { core.discontinuity = true }
                core.lastXruns = status.xruns
                guard core.deviceLost else { return nil }
                core.deviceLost = false
                core.discontinuity = true
                for group in core.groups { group.reset() }
                broadcast(.restored, in: core.groups)
                return .restored
            }
            guard !core.deviceLost else { return nil }
            core.deviceLost = true
            // A device lost before it delivered its first period (sound servers can take a second
            // to start delivering) still loses the time from here to its first period after the
            // restore: without a reference the outage would not be counted at all.
            if core.expectedNext == nil { core.expectedNext = MonotonicClock.nowNanoseconds() }
            broadcast(.lost, in: core.groups)
            return .lost
        }
        if let event {
            published.withLock { $0.deviceLost = event == .lost }
            logger.info("capture device \(event.rawValue)", metadata: ["subscribers": "\(subscriberCount)"])
        }
    }

    private func broadcast(_ state: DeviceMessage.State, in groups: [CaptureGroup]) {
        for group in groups { group.broadcast(state) }
    }

    // MARK: - Clients

    /// Throws 429 when the server already has its most capture clients.
    public func checkCapacity() throws(APIError) {
        let count = members.withLock { $0.count }
        guard count < limits.maxCaptureClients else {
            throw APIError(.tooManyRequests, "the server already has \(limits.maxCaptureClients) capture clients")
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
    ) throws(APIError) -> CaptureSubscriber {
        let writer = channel.map {
            CaptureChannelWriter(
                channel: $0, drain: drain(for: $0.eventLoop), json: parameters.encoding == .json, metrics: metrics)
        }
        let subscriber = CaptureSubscriber(
            id: nextID.add(1, ordering: .relaxed).oldValue, parameters: parameters, transport: transport,
            queueMilliseconds: queueMilliseconds ?? limits.captureQueueMilliseconds, writer: writer)
        if transport != .recording {
            try members.withLock { members throws(APIError) in
                guard members.count < limits.maxCaptureClients else {
                    throw APIError(.tooManyRequests, "the server already has \(limits.maxCaptureClients) capture clients")
                }
                members.append(subscriber)
            }
        }
        let quality = quality
        let echo = echoReference
        do throws(APIError) {
            try join(subscriber, quality: quality, echo: echo)
        } catch {
            members.withLock { $0.removeAll { $0 === subscriber } }
            throw error
        }
        publishCounts()
        return subscriber
    }

    private func join(_ subscriber: CaptureSubscriber, quality: Resampler.Quality, echo: EchoReference) throws(APIError) {
        let parameters = subscriber.parameters
        try core.withLock { core throws(APIError) in
            let group: CaptureGroup
            if let existing = core.groups.first(where: {
                $0.format == parameters.format && $0.processing == parameters.processing
            }) {
                group = existing
            } else {
                do {
                    group = try CaptureGroup(
                        format: parameters.format, quality: quality, processing: parameters.processing, echo: echo)
                } catch {
                    throw APIError(.badParameter, "capture processing is unavailable: \(error)")
                }
                // Built here, on the client's task, so the capture thread does not allocate it.
                if let hardware = core.hardware { group.prepare(for: hardware) }
                core.groups.append(group)
            }
            group.add(subscriber)
            listening.store(true, ordering: .relaxed)
            publishShortestChunk(core.groups)
            if core.deviceLost { subscriber.deliver(.lost) }
        }
        demand.wake()
    }

    private func drain(for eventLoop: any EventLoop) -> CaptureDrain {
        loopDrains.withLock { drains in
            let key = ObjectIdentifier(eventLoop)
            if let drain = drains[key] { return drain }
            let drain = CaptureDrain(eventLoop: eventLoop, metrics: metrics)
            drains[key] = drain
            return drain
        }
    }

    /// Removes a client; the last one of a format frees the group and its resampler.
    public func unsubscribe(_ subscriber: CaptureSubscriber) {
        subscriber.close()
        let removed = core.withLock { core -> CaptureGroup? in
            guard
                let index = core.groups.firstIndex(where: {
                    $0.format == subscriber.parameters.format && $0.processing == subscriber.parameters.processing
                })
            else {
                return nil
            }
            let group = core.groups[index]
            group.remove(subscriber)
            defer { publishShortestChunk(core.groups) }
            guard group.subscribers.isEmpty else { return nil }
            core.groups.remove(at: index)
            listening.store(!core.groups.isEmpty, ordering: .relaxed)
            return group
        }
        removed?.close()
        // The resampler is freed here, outside the lock, when the last reference goes.
        _ = removed
        members.withLock { $0.removeAll { $0 === subscriber } }
        publishCounts()
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

    // MARK: - Status

    /// The level of the last 50 ms of captured audio in dBFS.
    public var lastLevel: (rms: Double, peak: Double) { published.withLock { $0.lastLevel } }

    /// Connected subscribers.
    public var subscriberCount: Int { members.withLock { $0.count } }

    /// Connected subscribers, oldest first.
    public var subscribers: [CaptureSubscriber] { members.withLock { $0 } }

    /// Milliseconds of capture lost to xruns and device outages since start.
    public var lostMilliseconds: Double { Double(published.withLock { $0.lostNanoseconds }) / 1e6 }

    /// Whether the capture device is currently lost (clients were told `device lost`).
    public var isDeviceLost: Bool { published.withLock { $0.deviceLost } }
}
