import AudioGateCore
import Synchronization

extension PlaybackMixer {
    /// The queued stream called `name`, created on first use; balance with `release`.
    ///
    /// Throws 429 when `maxPlaybackStreams` streams are in use, and 400 when `name` is a timed stream's.
    /// The stream takes `role` (the last acquirer's role holds for every producer on the name).
    public func acquire(_ name: String, role: PlaybackRole = .voice) throws(PlaybackError) -> PlaybackStream {
        try acquire(name, role: role, policy: .queued)
    }

    /// A timed stream called `name` fed by one producer (a network player), and that producer's
    /// ingest for s16 chunks in `format`; balance with `release(_:)`, which frees the name.
    ///
    /// Throws 400 when `format` is not one a timed stream takes or a stream called `name` is in
    /// use, and 429 when `maxPlaybackStreams` streams are in use.
    func acquireTimed(_ name: String, role: PlaybackRole, format: AudioFormat) throws(PlaybackError) -> PlaybackIngest {
        guard PlaybackIngest.accepts(format) else {
            throw PlaybackError(.badParameter, "a timed stream takes 1-8 channels at 8000-192000 Hz, not \(format)")
        }
        let stream = try acquire(name, role: role, policy: .timed)
        return try PlaybackIngest.timed(stream: stream, format: format, mixFormat: mixFormatProvider)
    }

    private func acquire(_ name: String, role: PlaybackRole, policy: PlayoutPolicy) throws(PlaybackError) -> PlaybackStream {
        let format = mixFormat
        let result: Result<PlaybackStream, PlaybackError> = registry.withLock { registry in
            if var entry = registry.entries[name] {
                guard entry.stream.policy == policy else {
                    return .failure(
                        PlaybackError(
                            .badParameter,
                            entry.stream.policy == .timed
                                ? "stream '\(name)' is a timed stream; choose another name"
                                : "a playback stream called '\(name)' exists; choose another name for a timed stream"))
                }
                // A timed stream has one producer: its audio is dated by that producer's clock.
                guard policy == .queued || entry.users == 0 else {
                    return .failure(PlaybackError(.badParameter, "a playback stream called '\(name)' exists"))
                }
                entry.users += 1
                registry.entries[name] = entry
                entry.stream.role = role
                registry.update()
                return .success(entry.stream)
            }
            sweep(&registry)
            guard registry.entries.count < configuration.limits.maxPlaybackStreams else {
                return .failure(
                    PlaybackError(
                        .tooManyRequests,
                        "\(configuration.limits.maxPlaybackStreams) playback streams are in use; reuse a stream name or try later"))
            }
            let stream = PlaybackStream(
                name: name, mixFormat: format, limitSeconds: configuration.limits.playbackQueueSeconds,
                quality: configuration.resamplerQuality, metrics: metrics, role: role,
                maxPendingMarks: configuration.limits.maxPendingMarks, policy: policy,
                demand: policy == .timed ? demand : nil)
            registry.entries[name] = Entry(stream: stream, users: 1)
            registry.list = registry.list + [stream]
            registry.update()
            return .success(stream)
        }
        let stream = try result.get()
        // A timed stream holds no demand of its own: its first chunk wakes the device.
        if policy == .queued { demand.wake() }
        metrics.streams.set(to: Double(streamCount))
        return stream
    }

    /// Gives back a stream taken with `acquire` or `acquireTimed`; an idle stream nobody uses is
    /// forgotten. A timed stream is cleared and forgotten at once: without its producer, its
    /// audio has no clock.
    public func release(_ stream: PlaybackStream) {
        if stream.policy == .timed { stream.clear(measured: false) }
        registry.withLock { registry in
            guard var entry = registry.entries[stream.name], entry.stream === stream else { return }
            entry.users -= 1
            registry.entries[stream.name] = entry
            if stream.policy == .timed, entry.users <= 0 { remove(stream.name, from: &registry) }
            sweep(&registry)
        }
        metrics.streams.set(to: Double(streamCount))
    }

    /// A stream by name, if one exists.
    public func existingStream(_ name: String) -> PlaybackStream? {
        registry.withLock { $0.entries[name]?.stream }
    }

    /// Every stream.
    public var allStreams: [PlaybackStream] { registry.withLock { $0.list } }

    /// Drops unused streams that have nothing left to play.
    private func sweep(_ registry: inout Registry) {
        let idle = registry.entries.filter { $0.value.users <= 0 && $0.value.stream.isIdle }
        guard !idle.isEmpty else { return }
        for name in idle.keys { remove(name, from: &registry) }
    }

    private func remove(_ name: String, from registry: inout Registry) {
        guard let entry = registry.entries.removeValue(forKey: name) else { return }
        retiredUnderruns.add(entry.stream.underruns, ordering: .relaxed)
        registry.list = registry.list.filter { $0 !== entry.stream }
        registry.update()
    }

    /// The format client audio is converted to, for streams' writers.
    var mixFormatProvider: @Sendable () -> AudioFormat {
        { [self] in mixFormat }
    }
}
