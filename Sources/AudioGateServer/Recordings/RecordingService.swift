import AudioGateCore
import Foundation
import Logging
import NIOCore
import NIOPosix
import Prometheus
import ServiceLifecycle
import Synchronization

/// Server-side recordings: starts, stops, lists and removes them, keeps them within the retention
/// policy, and finishes every running one on graceful shutdown.
///
/// The recordings directory is read (and interrupted recordings repaired) when the service is made,
/// before the server answers anything.
public final class RecordingService: Service, Sendable {
    private let hub: CaptureHub
    private let store: Result<RecordingStore, RecordingError>
    private let quota: DiskQuota
    private let pool: NIOThreadPool
    private let retentionSeconds: Double
    /// Wakes the retention sweep early: a recording finished, and may be the next to expire.
    private let retentionWake = Mutex(OneShot<Void>())
    private let maxRecordings: Int
    private let logger: Logger
    private let recordings = Mutex<[String: Recording]>([:])
    private let jobs: AsyncStream<Recording>
    private let jobQueue: AsyncStream<Recording>.Continuation
    private let accepting = Atomic<Bool>(true)
    private let activeGauge: Gauge
    private let diskGauge: Gauge

    public init(configuration: ServerConfiguration, hub: CaptureHub, metrics: ServerMetrics, logger: Logger) {
        self.hub = hub
        self.logger = logger
        pool = .singleton
        retentionSeconds = configuration.retentionHours * 3600
        maxRecordings = configuration.limits.maxRecordings
        quota = DiskQuota(limitMegabytes: configuration.maxDiskMegabytes)
        (jobs, jobQueue) = AsyncStream.makeStream(of: Recording.self)
        activeGauge = metrics.registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "audiogate", subsystem: "recordings", metricName: "active", unitName: "", helpText: "Recordings capturing now"))
        diskGauge = metrics.registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "audiogate", subsystem: "recordings", metricName: "disk", unitName: "bytes",
                helpText: "Bytes the recordings take on disk"))
        do throws(RecordingError) {
            let store = try RecordingStore(dataDirectory: configuration.dataDirectory, logger: logger)
            let (found, bytes) = store.loadAll()
            quota.add(bytes)
            recordings.withLock { table in
                for info in found { table[info.id] = Recording(finished: info) }
            }
            self.store = .success(store)
        } catch {
            logger.error("recordings are unavailable: \(error.message)")
            store = .failure(error)
        }
        quota.onFull { [weak self] in self?.removeOldestFinished() ?? false }
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { [self] in
                    try? await cancelWhenGracefulShutdown {
                        while true {
                            await self.sweep()
                            try await self.waitForNextExpiry()
                        }
                    }
                }
                for await recording in jobs {
                    group.addTask { [self] in
                        await recording.run(hub: hub, pool: pool)
                        retentionWake.withLock { $0 }.fulfill(())
                    }
                }
            }
        } onGracefulShutdown: { [self] in
            accepting.store(false, ordering: .sequentiallyConsistent)
            jobQueue.finish()
            for recording in recordings.withLock({ Array($0.values) }) where recording.isRunning {
                recording.requestStop(reason: "shutdown")
            }
        }
    }

    // MARK: - API

    /// Starts a recording and answers its first state.
    func start(_ request: RecordingRequest) async throws(RecordingError) -> RecordingInfo {
        let store = try availableStore()
        guard accepting.load(ordering: .sequentiallyConsistent) else {
            throw RecordingError(.unavailable, "the server is shutting down")
        }
        let running = recordings.withLock { $0.values.count { $0.isRunning } }
        guard running < maxRecordings else {
            throw RecordingError(.tooManyRecordings, "the server already runs \(maxRecordings) recordings")
        }
        let id = RecordingID.make()
        let info = RecordingInfo(
            id: id, name: request.name, state: .recording, rate: request.format.rate,
            channels: request.format.channels, format: request.format.sampleFormat.rawValue,
            segmentSeconds: request.segmentSeconds, maxSeconds: request.maxSeconds,
            startedAt: Timestamp.format(Date()), endedAt: nil, frames: 0, bytes: 0, segments: [], gaps: [],
            failure: nil, stopReason: nil, processing: request.processing, codec: request.codec, bitrate: request.bitrate)
        let created = await blocking { () -> Result<Void, RecordingError> in
            do throws(RecordingError) {
                try store.create(id)
                try store.reserve(id)
                try store.save(info)
                return .success(())
            } catch {
                store.remove(id)
                return .failure(error)
            }
        }
        if case .failure(let error) = created {
            logger.error("cannot start a recording: \(error)")
            throw error.code == .io ? RecordingError(.io, "cannot create the recording: \(error.message)") : error
        }
        var parameters = CaptureParameters()
        parameters.format = request.format
        parameters.processing = request.processing
        parameters.chunkMilliseconds = Recording.chunkMilliseconds
        let subscriber: CaptureSubscriber
        do throws(CaptureError) {
            subscriber = try hub.subscribe(parameters, transport: .recording, queueMilliseconds: Recording.queueMilliseconds)
        } catch {
            // Recordings are not counted among capture clients: only their processing can be refused.
            throw RecordingError(.badParameter, error.message)
        }
        let recording = Recording(
            writer: RecordingWriter(info: info, request: request, store: store, quota: quota), subscriber: subscriber)
        recordings.withLock { $0[id] = recording }
        jobQueue.yield(recording)
        logger.info(
            "recording \(id) started", metadata: ["format": "\(request.format.rate) Hz \(request.format.channels) ch \(request.format.sampleFormat.rawValue)"])
        return info
    }

    /// Every recording, oldest first.
    var all: [RecordingInfo] {
        recordings.withLock { $0.values.map(\.info) }.sorted { ($0.startedAt, $0.id) < ($1.startedAt, $1.id) }
    }

    /// One recording's state.
    func info(_ id: String) throws(RecordingError) -> RecordingInfo {
        try recording(id).info
    }

    /// Stops a recording (no-op when it has ended) and answers its final state.
    func stop(_ id: String) async throws(RecordingError) -> RecordingInfo {
        let recording = try recording(id)
        if recording.isRunning { await recording.stop(reason: "request") }
        return recording.info
    }

    /// Stops a recording if it runs, then removes it and its files.
    func delete(_ id: String) async throws(RecordingError) {
        let recording = try recording(id)
        if recording.isRunning { await recording.stop(reason: "request") }
        let store = try availableStore()
        guard let freed = await blocking({ [self] in forget(id, in: store) }) else { return }
        quota.release(freed)
        logger.info("recording \(id) deleted", metadata: ["bytes": "\(freed)"])
    }

    /// Where one segment's audio is, for a download of it as stored: `wav`, `flac`, or `opus`/`ogg`
    /// as the recording's codec says; nil for another extension (a conversion). A file that is gone
    /// or refused (a link, not a regular file) answers an error before the download starts.
    func storedSegment(_ id: String, index: Int, fileExtension: String) async throws(RecordingError) -> SegmentDownload? {
        let store = try availableStore()
        let info = try recording(id).info
        guard info.segments.indices.contains(index) else {
            throw RecordingError(.notFound, "recording \(id) has no segment \(index)")
        }
        let codec = info.segmentCodec
        guard fileExtension == codec.fileExtension || (codec == .opus && fileExtension == "ogg") else { return nil }
        let segment = info.segments[index]
        let path = store.path(of: id, file: segment.file)
        try await checkFiles([path])
        return SegmentDownload(
            path: path, format: info.audioFormat, frames: segment.frames,
            name: "\(id)-\(segment.file)", codec: codec, encodedBytes: segment.bytes ?? 0)
    }

    /// Disk use for `GET /v1/recordings`.
    var disk: (usedBytes: Int, limitBytes: Int?, directory: String?) {
        let directory = try? store.get().root
        return (quota.usedBytes, quota.limitBytes, directory)
    }

    /// Copies counts into the Prometheus gauges (at scrape time).
    func refreshMetrics() {
        activeGauge.set(to: Double(recordings.withLock { $0.values.count { $0.isRunning } }))
        diskGauge.set(to: Double(quota.usedBytes))
    }

    // MARK: - Retention

    /// Removes finished recordings older than the retention time, then the oldest finished ones
    /// while the disk cap is exceeded.
    func sweep() async {
        guard case .success = store else { return }
        let now = Date()
        let expired = recordings.withLock { table -> [String] in
            guard retentionSeconds > 0 else { return [] }
            return table.values.compactMap { recording in
                let info = recording.info
                guard info.state.isFinished, let ended = info.endedAt.flatMap(Timestamp.parse),
                    now.timeIntervalSince(ended) > retentionSeconds
                else { return nil }
                return info.id
            }
        }
        for id in expired {
            await blocking { [self] in remove(id, why: "older than the retention time") }
        }
        if let limit = quota.limitBytes {
            while quota.usedBytes > limit, await blocking({ [self] in removeOldestFinished() }) {}
        }
    }

    /// Sleeps until the first finished recording passes the retention time, or a recording
    /// finishes; with nothing to expire, only the latter. A timer for that moment, not a poll.
    private func waitForNextExpiry() async throws {
        let wake = retentionWake.withLock { $0 }
        let now = Date()
        let next = recordings.withLock { table -> Date? in
            guard retentionSeconds > 0 else { return nil }
            return table.values.compactMap { recording -> Date? in
                let info = recording.info
                guard info.state.isFinished, let ended = info.endedAt.flatMap(Timestamp.parse) else { return nil }
                return ended.addingTimeInterval(retentionSeconds)
            }.min()
        }
        let timer = next.map { expiry in
            // Just past the moment, so the sweep finds the recording older than the retention time.
            let delay = TimeAmount.milliseconds(Int64(max(0, expiry.timeIntervalSince(now)) * 1000) + 10)
            return MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: delay) { wake.fulfill(()) }
        }
        defer { timer?.cancel() }
        try await wake.wait()
        retentionWake.withLock { if $0 === wake { $0 = OneShot() } }
    }

    /// Removes the finished recording that started first; false when there is none.
    private func removeOldestFinished() -> Bool {
        let oldest = recordings.withLock { table in
            table.values.map(\.info).filter(\.state.isFinished).min { ($0.startedAt, $0.id) < ($1.startedAt, $1.id) }
        }
        guard let oldest else { return false }
        remove(oldest.id, why: "the disk limit was reached")
        return true
    }

    /// Forgets a finished recording and deletes its folder (blocking).
    private func remove(_ id: String, why: String) {
        guard case .success(let store) = store, let freed = forget(id, in: store) else { return }
        quota.release(freed)
        logger.notice("recording \(id) removed: \(why)", metadata: ["bytes": "\(freed)"])
    }

    /// Drops a recording from the table and its folder from the listing in one step, then deletes
    /// the folder (blocking); nil when another removal got there first.
    ///
    /// Nobody sees the recording listed without its folder, or its folder still in place once it
    /// is no longer listed.
    private func forget(_ id: String, in store: RecordingStore) -> Int? {
        let detached = recordings.withLock { table -> String?? in
            guard table.removeValue(forKey: id) != nil else { return .none }
            return .some(store.detach(id))
        }
        guard let detached else { return nil }
        return detached.map(store.purge) ?? 0
    }

    // MARK: - Helpers

    func availableStore() throws(RecordingError) -> RecordingStore {
        switch store {
        case .success(let store): return store
        case .failure(let error): throw RecordingError(.unavailable, "recordings are unavailable: \(error.message)")
        }
    }

    private func recording(_ id: String) throws(RecordingError) -> Recording {
        guard RecordingID.isValid(id) else {
            throw RecordingError(.badParameter, "invalid recording id: ids are 1-64 characters of 0-9, a-z and '-'")
        }
        guard let recording = recordings.withLock({ $0[id] }) else {
            throw RecordingError(.notFound, "no recording \(id)")
        }
        return recording
    }

    /// Opens every file as a download of it would (on the thread pool), so that one gone or refused
    /// answers a clear error before any response starts; the download's own open checks again.
    func checkFiles(_ paths: [String]) async throws(RecordingError) {
        let failure = await blocking { () -> RecordingError? in
            for path in paths {
                do throws(RecordingError) {
                    _ = try FileDescriptorBox(path: path)
                } catch {
                    return error
                }
            }
            return nil
        }
        if let failure { throw failure }
    }

    /// Runs blocking file work on the thread pool (inline once the pool has shut down).
    private func blocking<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        do {
            return try await pool.runIfActive(body)
        } catch {
            return body()
        }
    }
}
