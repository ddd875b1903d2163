import AudioGateCore
import AudioGateDevices
import Synchronization

/// What the mixer wrote to the playback device (after volume), kept for a few seconds and dated by
/// when it leaves the speaker, so echo cancellers can read the reference for any capture time.
///
/// Written by the playback thread (one short lock per period, no allocation after the first
/// period), read by the voice processing threads.
public final class EchoReference: Sendable {
    /// How much reference is kept, in seconds (echo paths are far shorter; processing may lag).
    static let seconds = 2
    private struct State {
        var samples: [Float] = []
        var rate = 0
        /// Device frame after the last stored one.
        var endFrame: UInt64 = 0
        /// The playback device's clock as of its last write: when each device frame leaves the
        /// speaker. Its anchor count is the timing's epoch: each anchoring is a new timing between
        /// the mixer and the speaker (the device started again after idling, reopened, or ran
        /// late), so the echo path a canceller learned may have moved.
        var clock = DeviceClock(tuning: .playback)
    }

    private let state = Mutex(State())

    /// An empty reference (silence until the mixer writes).
    public init() {}

    // MARK: - Playback thread

    /// Stores one rendered period (interleaved at the device format), downmixed to mono; nil
    /// `output` is a period of silence (nothing played), stored without reading a sample.
    func rendered(_ output: UnsafeBufferPointer<Float>?, frames: Int, format: AudioFormat, startFrame: UInt64) {
        let lent = output.map { LentBuffer($0) }
        state.withLock { state in
            if state.rate != format.rate || state.samples.isEmpty {
                // Only on the first period or after a format change: not the steady path.
                state.rate = format.rate
                state.samples = [Float](repeating: 0, count: format.rate * Self.seconds)
            }
            let capacity = state.samples.count
            let channels = format.channels
            state.samples.withUnsafeMutableBufferPointer { ring in
                // In runs up to the ring's end: one division per run, not per frame.
                var frame = 0
                while frame < frames {
                    let slot = Int((startFrame &+ UInt64(frame)) % UInt64(capacity))
                    let run = min(frames - frame, capacity - slot)
                    if let output = lent?.readOnly {
                        _ = ChannelMixer.downmixToMono(
                            UnsafeBufferPointer(rebasing: output[(frame * channels)..<((frame + run) * channels)]),
                            channels: channels, into: UnsafeMutableBufferPointer(rebasing: ring[slot..<(slot + run)]))
                    } else {
                        UnsafeMutableBufferPointer(rebasing: ring[slot..<(slot + run)]).update(repeating: 0)
                    }
                    frame += run
                }
            }
            state.endFrame = startFrame &+ UInt64(frames)
        }
    }

    /// After each write: the playback device's clock, which dates the frames stored.
    func progress(_ clock: DeviceClock) {
        state.withLock { $0.clock = clock }
    }

    // MARK: - Processing threads

    /// The device rate of the reference (0 before the first period).
    var rate: Int { state.withLock { $0.rate } }

    /// The device frame that leaves the speaker at `time` (monotonic ns) and the timing's epoch (it
    /// changes when the device starts a new run: another delay, another echo path), nil before
    /// playback ran.
    func deviceFrame(at time: UInt64) -> (frame: Double, epoch: UInt64)? {
        state.withLock { state in
            guard state.rate > 0, let frame = state.clock.frame(at: time) else { return nil }
            return (frame, state.clock.runs)
        }
    }

    /// Copies device frames `start..<start+count` into `destination`; frames never written or
    /// already overwritten read as silence (nothing played then).
    func read(from start: Int64, into destination: UnsafeMutableBufferPointer<Float>) {
        state.withLock { state in
            let capacity = Int64(state.samples.count)
            let end = Int64(bitPattern: state.endFrame)
            for index in 0..<destination.count {
                let frame = start + Int64(index)
                if capacity > 0, frame < end, frame >= max(0, end - capacity) {
                    destination[index] = state.samples[Int(frame % capacity)]
                } else {
                    destination[index] = 0
                }
            }
        }
    }
}
