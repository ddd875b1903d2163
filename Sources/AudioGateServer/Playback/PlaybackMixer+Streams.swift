import AudioGateCore
import Synchronization

extension PlaybackMixer {
    /// The stream called `name`, created on first use; balance with `release`.
    ///
    /// Throws 429 when `maxPlaybackStreams` streams are in use.
    /// The stream takes `role` (the last acquirer's role holds for every producer on the name).
    public func acquire(_ name: String, role: PlaybackRole = .voice) throws(APIError) -> PlaybackStream {
        let format = mixFormat
        let result: Result<PlaybackStream, APIError> = registry.withLock { registry in
            if var entry = registry.entries[name] {
                entry.users += 1
                registry.entries[name] = entry
                entry.stream.role = role
                registry.updateMusic()
                return .success(entry.stream)
            }
            if registry.timed.contains(where: { $0.name == name }) {
                return .failure(APIError(.badParameter, "stream '\(name)' is a timed stream; choose another name"))
            }
            sweep(&registry)
            guard registry.entries.count + registry.timed.count < configuration.limits.maxPlaybackStreams else {
                return .failure(
                    APIError(
                        .tooManyRequests,
                        "\(configuration.limits.maxPlaybackStreams) playback streams are in use; reuse a stream name or try later"))
            }
            let stream = PlaybackStream(
                name: name, mixFormat: format, limitSeconds: configuration.limits.playbackQueueSeconds,
                quality: configuration.resamplerQuality, metrics: metrics, role: role,
                maxPendingMarks: configuration.limits.maxPendingMarks)
            registry.entries[name] = Entry(stream: stream, users: 1)
            registry.list = registry.list + [stream]
            registry.updateMusic()
            return .success(stream)
        }
        let stream = try result.get()
        demand.wake()
        metrics.streams.set(to: Double(streamCount))
        return stream
    }

    /// Gives back a stream taken with `acquire`; an idle stream nobody uses is forgotten.
    public func release(_ stream: PlaybackStream) {
        registry.withLock { registry in
            guard var entry = registry.entries[stream.name], entry.stream === stream else { return }
            entry.users -= 1
            registry.entries[stream.name] = entry
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

    /// Registers a new timed stream under its own name.
    func addTimed(_ stream: TimedPlaybackStream) throws(APIError) {
        let result: Result<Void, APIError> = registry.withLock { registry in
            sweep(&registry)
            if registry.entries[stream.name] != nil || registry.timed.contains(where: { $0.name == stream.name }) {
                return .failure(APIError(.badParameter, "a playback stream called '\(stream.name)' exists"))
            }
            guard registry.entries.count + registry.timed.count < configuration.limits.maxPlaybackStreams else {
                return .failure(
                    APIError(
                        .tooManyRequests,
                        "\(configuration.limits.maxPlaybackStreams) playback streams are in use; reuse a stream name or try later"))
            }
            registry.timed = registry.timed + [stream]
            registry.updateMusic()
            return .success(())
        }
        try result.get()
        metrics.streams.set(to: Double(streamCount))
    }

    /// Forgets a closed timed stream.
    func removeTimed(_ stream: TimedPlaybackStream) {
        registry.withLock { registry in
            registry.timed = registry.timed.filter { $0 !== stream }
            registry.updateMusic()
        }
        metrics.streams.set(to: Double(streamCount))
    }

    /// Every timed stream.
    public var timedStreams: [TimedPlaybackStream] { registry.withLock { $0.timed } }

    /// Drops unused streams that have nothing left to play.
    private func sweep(_ registry: inout Registry) {
        let idle = registry.entries.filter { $0.value.users <= 0 && $0.value.stream.isIdle }
        guard !idle.isEmpty else { return }
        for (name, entry) in idle {
            retiredUnderruns.add(entry.stream.underruns, ordering: .relaxed)
            registry.entries[name] = nil
        }
        registry.list = registry.list.filter { stream in registry.entries[stream.name]?.stream === stream }
        registry.updateMusic()
    }

    /// The format client audio is converted to, for streams' writers.
    var mixFormatProvider: @Sendable () -> AudioFormat {
        { [self] in mixFormat }
    }
}
