import AudioGateCore
import Foundation
import Synchronization

/// The built-in software sound card: paced by the monotonic clock, what is played comes back as
/// capture ("air" indexed by absolute frame number), so the API can be tried on any machine.
public final class LoopbackCard: Sendable {
    /// The device name that selects it.
    public static let deviceName = "loopback"
    /// The card's one hardware format.
    public static let format = AudioFormat(rate: 48000, channels: 2, sampleFormat: .f32le)
    /// Seconds of played audio kept for capture to read.
    static let airSeconds = 2

    struct Air {
        var samples: [Float]
        /// First frame not yet written by playback.
        var writePosition: Int64 = 0
        var playbackStarted = false
    }

    let air: Mutex<Air>
    let epoch: UInt64
    let capacityFrames: Int64

    public init() {
        capacityFrames = Int64(Self.format.rate * Self.airSeconds)
        air = Mutex(Air(samples: [Float](repeating: 0, count: Int(capacityFrames) * Self.format.channels)))
        epoch = MonotonicClock.nowNanoseconds()
    }

    /// The frame the clock is at now.
    var nowFrame: Int64 {
        Int64((MonotonicClock.nowNanoseconds() - epoch) / 1000) * Int64(Self.format.rate) / 1_000_000
    }

    /// Nanoseconds until the clock reaches `frame` (0 when it already has).
    func nanoseconds(until frame: Int64) -> UInt64 {
        let ahead = frame - nowFrame
        return ahead <= 0 ? 0 : UInt64(ahead) * 1_000_000_000 / UInt64(Self.format.rate)
    }

    func write(_ source: UnsafePointer<Float>, frames: Int, bufferFrames: Int) throws(ALSAError) -> Int {
        let channels = Self.format.channels
        let now = nowFrame
        return try air.withLock { (air: inout Air) throws(ALSAError) -> Int in
            if air.playbackStarted && air.writePosition < now {
                throw ALSAError(code: .xrun, call: "loopback_write", errno: EPIPE, message: "underrun")
            }
            if !air.playbackStarted {
                // Frames between the last write and now were never played: they are silence.
                zero(&air, from: air.writePosition, to: now)
                air.writePosition = max(air.writePosition, now)
                air.playbackStarted = true
            }
            let room = bufferFrames - Int(air.writePosition - now)
            let count = max(0, min(room, frames))
            let start = air.writePosition
            air.samples.withUnsafeMutableBufferPointer { samples in
                // At most two runs (the ring wraps once): a copy each, not a division per frame.
                var done = 0
                while done < count {
                    let slot = Int((start + Int64(done)) % capacityFrames)
                    let run = min(count - done, Int(capacityFrames) - slot)
                    (samples.baseAddress! + slot * channels).update(from: source + done * channels, count: run * channels)
                    done += run
                }
            }
            air.writePosition += Int64(count)
            return count
        }
    }

    func read(into destination: UnsafeMutablePointer<Float>, from position: Int64, frames: Int) {
        let channels = Self.format.channels
        destination.update(repeating: 0, count: frames * channels)
        air.withLock { air in
            // Only frames still in the air were played; the rest stay silent.
            let first = max(position, air.writePosition - capacityFrames)
            let end = min(position + Int64(frames), air.writePosition)
            guard first < end else { return }
            air.samples.withUnsafeBufferPointer { samples in
                var absolute = first
                while absolute < end {
                    let slot = Int(absolute % capacityFrames)
                    let run = min(Int(end - absolute), Int(capacityFrames) - slot)
                    (destination + Int(absolute - position) * channels).update(
                        from: samples.baseAddress! + slot * channels, count: run * channels)
                    absolute += Int64(run)
                }
            }
        }
    }

    func playbackDelay() -> Int {
        let now = nowFrame
        return air.withLock { Int(max(0, $0.writePosition - now)) }
    }

    func preparePlayback() {
        air.withLock { $0.playbackStarted = false }
    }

    private func zero(_ air: inout Air, from start: Int64, to end: Int64) {
        let channels = Self.format.channels
        let first = max(start, end - capacityFrames)
        guard first < end else { return }
        for absolute in first..<end {
            let slot = Int(absolute % capacityFrames) * channels
            for channel in 0..<channels { air.samples[slot + channel] = 0 }
        }
    }
}
