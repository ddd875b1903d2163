import AudioGateCore
import Synchronization

/// Whether anyone needs a device: a loop whose device nobody has used for `idleMilliseconds` stops
/// it (`snd_pcm_drop`) and sleeps until it is wanted again, as PulseAudio and PipeWire suspend an
/// idle sink or source. Users wake it with `wake()`; a status reader keeps it running with `touch()`.
public final class DeviceDemand: Sendable {
    /// How long a device runs on after its last user left; 0 keeps it running for good.
    public let idleMilliseconds: Int
    /// Set by `wake()` and cleared by the parked loop: a wake that lands between the loop's last
    /// check and its wait is not lost.
    private let pending = Atomic<Bool>(false)
    private let parked = Atomic<Bool>(false)
    private let lastTouch = Atomic<UInt64>(0)
    private let wakeup = ThreadWakeup()

    public init(idleMilliseconds: Int) {
        self.idleMilliseconds = max(0, idleMilliseconds)
    }

    /// Whether the device may stop at all.
    public var stopsWhenIdle: Bool { idleMilliseconds > 0 }

    var idleNanoseconds: UInt64 { UInt64(idleMilliseconds) * 1_000_000 }

    /// Someone needs the device now: a parked loop starts it again.
    public func wake() {
        pending.store(true, ordering: .sequentiallyConsistent)
        if parked.load(ordering: .sequentiallyConsistent) { wakeup.signal() }
    }

    /// Keeps the device running for one more idle period (a reader of live state such as the level).
    public func touch() {
        lastTouch.store(MonotonicClock.nowNanoseconds(), ordering: .relaxed)
        wake()
    }

    /// Whether the device is wanted at `now`: a user has it (`inUse`), or a `touch()` still holds.
    func wanted(inUse: Bool, at now: UInt64) -> Bool {
        if inUse { return true }
        let last = lastTouch.load(ordering: .relaxed)
        return last != 0 && now &- last < idleNanoseconds
    }

    /// Blocks the device thread until the device is wanted (`inUse()`, or a touch) or
    /// `stopRequested()`, without timers: only a `wake()` (or a stop, which wakes too) gets it going again.
    func park(until inUse: () -> Bool, stopRequested: () -> Bool) {
        parked.store(true, ordering: .sequentiallyConsistent)
        defer { parked.store(false, ordering: .sequentiallyConsistent) }
        while !stopRequested() {
            _ = pending.exchange(false, ordering: .sequentiallyConsistent)
            if wanted(inUse: inUse(), at: MonotonicClock.nowNanoseconds()) { return }
            wakeup.wait()
        }
    }
}
