import AudioGateCore
import AudioGateDevices

extension CaptureHub {
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
}
